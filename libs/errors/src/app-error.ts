import { type ErrorCode, UNAUTHORIZED_MESSAGE, httpStatusOf } from "./codes.js";

/**
 * An error that is part of the product contract: it carries an error code of docs/concepts.md#errors and a message that is safe to show
 * to the caller. Anything thrown that is not an AppError is a bug and surfaces as INTERNAL_ERROR with a generic
 * message.
 */
export class AppError extends Error {
  override readonly name = "AppError";
  constructor(
    readonly code: ErrorCode,
    message: string,
    /** Extra fields for the response body (e.g. `retryAfterSeconds`); never secrets. */
    readonly details?: Record<string, unknown>,
  ) {
    super(message);
  }

  get httpStatus(): number {
    return httpStatusOf(this.code);
  }

  toBody(): { error: { code: ErrorCode; message: string } } {
    return { error: { code: this.code, message: this.message } };
  }
}

/** Thrown for missing, malformed, unknown, expired or revoked credentials. */
export const unauthorized = (): AppError => new AppError("UNAUTHORIZED", UNAUTHORIZED_MESSAGE);
/** Thrown when a resource does not exist in the caller's organization (never reveals other orgs' ids). */
export const notFound = (what: string): AppError => new AppError("NOT_FOUND", `${what} not found`);
/** Thrown when a body or query field fails validation; the message names the field. */
export const validationError = (message: string): AppError => new AppError("VALIDATION_ERROR", message);
/** Thrown when the request conflicts with the resource's state. */
export const conflict = (message: string): AppError => new AppError("CONFLICT", message);
/** Thrown when the caller's plan does not include the feature. */
export const planLimit = (message: string): AppError => new AppError("PLAN_LIMIT", message);
/** Thrown when the caller is authenticated but not allowed. */
export const forbidden = (message: string): AppError => new AppError("FORBIDDEN", message);
/** Thrown when the org's balance cannot cover the job. */
export const insufficientCredits = (message = "Credit balance is too low for this job"): AppError =>
  new AppError("INSUFFICIENT_CREDITS", message);
/** Thrown when a dependency is unreachable; callers may retry. */
export const serviceUnavailable = (message = "A dependency is unavailable; retry later"): AppError =>
  new AppError("SERVICE_UNAVAILABLE", message);

/** Socket errors of a dependency (PostgreSQL, NATS, another service) that is down or restarting. */
const UNREACHABLE_CODES = new Set(["ECONNREFUSED", "ECONNRESET", "EPIPE", "ETIMEDOUT", "EHOSTUNREACH", "ENETUNREACH"]);

/**
 * True for errors that mean "a dependency is down, retry later" rather than a bug: unreachable sockets, PostgreSQL
 * connection failures (SQLSTATE class 08) and shutdowns (57P01-57P03), and pg's "Connection terminated".
 */
export function isDependencyUnavailable(error: unknown): boolean {
  const { code, message } = (error ?? {}) as { code?: unknown; message?: unknown };
  if (typeof code === "string" && (UNREACHABLE_CODES.has(code) || code.startsWith("08") || /^57P0[123]$/.test(code))) return true;
  return typeof message === "string" && /^Connection terminated/.test(message);
}

/**
 * Converts anything thrown into an AppError: a dependency outage becomes SERVICE_UNAVAILABLE (503, safe to retry: docs/concepts.md#rate-limits
 * later); other unknown errors become INTERNAL_ERROR without leaking details.
 */
export function toAppError(error: unknown): AppError {
  if (error instanceof AppError) return error;
  if (isDependencyUnavailable(error)) return serviceUnavailable();
  return new AppError("INTERNAL_ERROR", "Internal error");
}
