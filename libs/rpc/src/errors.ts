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
/** A RATE_LIMITED error's wait, so the gateway can set `Retry-After` on whatever service refused. */
const RETRY_AFTER_KEY = "rb-retry-after";
/** The longest wait believed from a peer (a day): anything else is dropped, not passed on to clients. */
const MAX_RETRY_AFTER_SECONDS = 86_400;

/** An AppError as a gRPC error: the exact error code rides in trailing metadata, the status is its nearest match. */
export function toServiceError(error: AppError): Partial<ServiceError> {
  const metadata = new Metadata();
  metadata.set(CODE_KEY, error.code);
  const retryAfter = retryAfterOf(error.details?.retryAfterSeconds);
  if (error.code === "RATE_LIMITED" && retryAfter !== undefined) metadata.set(RETRY_AFTER_KEY, String(retryAfter));
  return { code: GRPC_STATUS[error.code], details: error.message, metadata };
}

/** A gRPC error as an AppError: the error code when the server sent one, else derived from the transport status. */
export function fromServiceError(error: ServiceError): AppError {
  const code = error.metadata?.get(CODE_KEY)[0];
  if (typeof code === "string" && isErrorCode(code)) {
    const retryAfter = code === "RATE_LIMITED" ? retryAfterOf(Number(error.metadata.get(RETRY_AFTER_KEY)[0])) : undefined;
    return retryAfter === undefined ? new AppError(code, error.details) : new AppError(code, error.details, { retryAfterSeconds: retryAfter });
  }
  if (error.code === status.UNAVAILABLE || error.code === status.DEADLINE_EXCEEDED || error.code === status.CANCELLED) {
    return serviceUnavailable();
  }
  return new AppError("INTERNAL_ERROR", "Internal error");
}

/** A whole number of seconds from 1 to a day, or undefined. */
function retryAfterOf(value: unknown): number | undefined {
  return typeof value === "number" && Number.isInteger(value) && value >= 1 && value <= MAX_RETRY_AFTER_SECONDS ? value : undefined;
}
