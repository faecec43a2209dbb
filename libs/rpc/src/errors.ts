import { Metadata, status, type ServiceError } from "@grpc/grpc-js";
import { AppError, isErrorCode, serviceUnavailable, type ErrorCode } from "@renderbus/errors";

/** gRPC status for each error code of docs/concepts.md#errors: the one mapping between the two, used in both directions. */
const GRPC_STATUS: Record<ErrorCode, status> = {
  UNAUTHORIZED: status.UNAUTHENTICATED,
  FORBIDDEN: status.PERMISSION_DENIED,
  PLAN_LIMIT: status.PERMISSION_DENIED,
  VALIDATION_ERROR: status.INVALID_ARGUMENT,
  INVALID_JOB_TYPE: status.INVALID_ARGUMENT,
  INSUFFICIENT_CREDITS: status.FAILED_PRECONDITION,
  NOT_FOUND: status.NOT_FOUND,
  CONFLICT: status.ABORTED,
  IDEMPOTENCY_KEY_REUSED: status.ALREADY_EXISTS,
  RATE_LIMITED: status.RESOURCE_EXHAUSTED,
  PAYLOAD_TOO_LARGE: status.OUT_OF_RANGE,
  INTERNAL_ERROR: status.INTERNAL,
  SERVICE_UNAVAILABLE: status.UNAVAILABLE,
};

const CODE_KEY = "rb-error-code";

/** An AppError as a gRPC error: the exact error code rides in trailing metadata, the status is its nearest match. */
export function toServiceError(error: AppError): Partial<ServiceError> {
  const metadata = new Metadata();
  metadata.set(CODE_KEY, error.code);
  return { code: GRPC_STATUS[error.code], details: error.message, metadata };
}

/** A gRPC error as an AppError: the error code when the server sent one, else derived from the transport status. */
export function fromServiceError(error: ServiceError): AppError {
  const code = error.metadata?.get(CODE_KEY)[0];
  if (typeof code === "string" && isErrorCode(code)) return new AppError(code, error.details);
  if (error.code === status.UNAVAILABLE || error.code === status.DEADLINE_EXCEEDED || error.code === status.CANCELLED) {
    return serviceUnavailable();
  }
  return new AppError("INTERNAL_ERROR", "Internal error");
}
