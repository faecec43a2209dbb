/**
 * The API error codes (docs/concepts.md, "Errors"), with their HTTP status. This table is the single place where a code meets
 * a status; the gRPC mapping lives in @renderbus/rpc and is derived from these codes.
 */
export const ERROR_CODES = {
  UNAUTHORIZED: 401,
  FORBIDDEN: 403,
  PLAN_LIMIT: 403,
  VALIDATION_ERROR: 400,
  INVALID_JOB_TYPE: 400,
  INSUFFICIENT_CREDITS: 402,
  NOT_FOUND: 404,
  CONFLICT: 409,
  IDEMPOTENCY_KEY_REUSED: 422,
  RATE_LIMITED: 429,
  PAYLOAD_TOO_LARGE: 413,
  INTERNAL_ERROR: 500,
  SERVICE_UNAVAILABLE: 503,
} as const;

export type ErrorCode = keyof typeof ERROR_CODES;

/** Failure codes carried by a failed job (docs/concepts.md, "Errors"). */
export const JOB_FAILURE_CODES = ["PROVIDER_ERROR", "PROVIDER_TIMEOUT", "INPUT_ERROR", "INSUFFICIENT_CREDITS"] as const;
export type JobFailureCode = (typeof JOB_FAILURE_CODES)[number];

export function isErrorCode(value: string): value is ErrorCode {
  return Object.hasOwn(ERROR_CODES, value);
}

export function httpStatusOf(code: ErrorCode): number {
  return ERROR_CODES[code];
}

/** The fixed message of every 401. */
export const UNAUTHORIZED_MESSAGE = "Authentication is invalid or expired";
