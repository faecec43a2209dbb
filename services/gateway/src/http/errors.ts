import type { FastifyError, FastifyReply, FastifyRequest } from "fastify";
import { AppError, toAppError, validationError } from "@renderbus/errors";
import type { Logger } from "@renderbus/telemetry";

/** A request target without its query string. */
export const pathOf = (target: string): string => target.split("?")[0]!;

/**
 * Largest declared body the gateway still reads (and discards) after refusing it, so that the connection stays open
 * until the client has sent it all. Closing a socket with unread bytes resets it, and a reset can destroy the
 * refusal before the client reads it: the client would see a broken connection instead of its 413 or 400.
 * Bodies declared larger, or of unknown length (chunked), are refused with `Connection: close` as before.
 */
export const REFUSED_BODY_DRAIN_MAX_BYTES = 8 * 1024 * 1024;

const MB = 1024 * 1024;
const tooLarge = (limit: number | undefined): AppError =>
  new AppError("PAYLOAD_TOO_LARGE", `Request body is larger than ${limit === undefined || limit % MB === 0 ? `${(limit ?? MB) / MB} MB` : `${limit} bytes`}`);

/** Fastify's own errors (body parsing, limits) as our errors (docs/concepts.md#errors). */
function fromFastifyError(error: FastifyError, request: FastifyRequest): AppError | undefined {
  switch (error.code) {
    case "FST_ERR_CTP_BODY_TOO_LARGE":
      return tooLarge(request.routeOptions.bodyLimit);
    case "FST_ERR_CTP_INVALID_MEDIA_TYPE":
      return validationError("body: Content-Type must be application/json");
    case "FST_ERR_CTP_INVALID_JSON_BODY":
    case "FST_ERR_CTP_EMPTY_JSON_BODY":
      return validationError("body: malformed JSON");
    case "FST_ERR_CTP_INVALID_CONTENT_LENGTH":
      return validationError("body: Content-Length does not match the body");
    default:
      if (error.statusCode === 413) return tooLarge(request.routeOptions.bodyLimit);
      if (error.statusCode && error.statusCode >= 400 && error.statusCode < 500) return validationError(error.message);
      return undefined;
  }
}

/**
 * The one place errors become HTTP responses: the body `{error:{code,message}}` of docs/concepts.md#errors, the code's status, and for 401 a
 * `WWW-Authenticate` challenge. Unknown errors are logged and answered as INTERNAL_ERROR without details.
 */
export function sendError(error: unknown, request: FastifyRequest, reply: FastifyReply, logger: Logger): FastifyReply {
  const appError = error instanceof AppError ? error : (fromFastifyError(error as FastifyError, request) ?? toAppError(error));
  keepConnectionWhileBodyDrains(request, reply);
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

/**
 * Fastify marks every refused body `Connection: close` because the client may still be sending it. When the rest is
 * of a known, bounded length, the header is dropped instead: Node then reads and discards the rest of the body
 * after the answer and keeps the connection, so the client always reads the refusal.
 */
function keepConnectionWhileBodyDrains(request: FastifyRequest, reply: FastifyReply): void {
  if (reply.getHeader("connection") !== "close") return;
  const declared = Number(request.headers["content-length"]);
  const bounded = request.headers["transfer-encoding"] === undefined && Number.isSafeInteger(declared) && declared <= REFUSED_BODY_DRAIN_MAX_BYTES;
  if (bounded) reply.removeHeader("connection");
}
