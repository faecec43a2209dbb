import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { AppError, toAppError, validationError } from "@renderbus/errors";
import type { Logger } from "@renderbus/telemetry";

/** A request target without its query string. */
export const pathOf = (target: string): string => target.split("?")[0]!;

/** Fastify's own errors (body parsing, limits) as our errors (docs/concepts.md#errors). */
function fromFastifyError(error: FastifyError): AppError | undefined {
  switch (error.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return new AppError("PAYLOAD_TOO_LARGE", "Request body is larger than 1 MB");
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return validationError("body: Content-Type must be application/json");
    case "FST_ERR_CTP_INVALID_JSON_BODY":
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return validationError("body: malformed JSON");
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return validationError("body: Content-Length does not match the body");
    default:
      if (error.statusCode === 413) return new AppError("PAYLOAD_TOO_LARGE", "Request body is larger than 1 MB");
      if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) return validationError(error.message);
      return undefined;
  }
}

/**
 * The one place errors become HTTP responses: the body `{error:{code,message}}` of docs/concepts.md#errors, the code's status, and for 401 a
 * `WWW-Authenticate` challenge. Unknown errors are logged and answered as INTERNAL_ERROR without details.
 */
export function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply, logger: Logger): FastifyReply {
  const appError = error instanceof AppError ? error : (fromFastifyError(error as FastifyError) ?? toAppError(error));
  // The path only: a query can hold a credential (the signature of an /outputs link), and logs must not (finding 23).
  if (appError.code === "INTERNAL_ERROR") logger.error({ err: error, requestId: request.id, method: request.method, path: pathOf(request.url) }, "request failed");
  if (appError.code === "UNAUTHORIZED") {
    reply.header("WWW-Authenticate", 'Bearer realm="renderbus"');
  }
  if (appError.code === "RATE_LIMITED" && typeof appError.details?.retryAfterSeconds === "number") {
    reply.header("Retry-After", String(appError.details.retryAfterSeconds));
  }
  return reply.status(appError.httpStatus).send(appError.toBody());
}
