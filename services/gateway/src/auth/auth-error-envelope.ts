import { AppError, type ErrorCode } from "@renderbus/errors";

/**
 * Paths whose error bodies belong to a protocol of their own: OAuth 2.0 (`{"error": "invalid_grant", ...}`, RFC
 * 6749 section 5.2) and its discovery documents. MCP clients parse those; they pass through untouched.
 */
const OWN_PROTOCOL_PATHS = [/^\/auth\/oauth2(\/|$)/i, /^\/auth\/mcp(\/|$)/i, /^\/auth\/oauth(\/|$)/i, /^\/\.well-known\//i];

/**
 * An error answer of Better Auth (`{"code": "INVALID_EMAIL_OR_PASSWORD", "message": "Invalid email or password"}`,
 * any 4xx or 5xx status) restated in the API's error envelope and table (docs/concepts.md#errors), so `/auth/*`
 * errors read like every other route's. Better Auth's message is kept for 4xx (it tells a person what to fix: a
 * wrong password, a taken email) and for 503, which only the auth service's own refusals answer (a mail server that
 * would not take a confirmation email: "retry later" says what to do; Better Auth itself answers 503 only from its
 * captcha plugin, not used). Any other 5xx, or a body without a message, gets the code's plain message: a failure's
 * text may name internals. Returns undefined for a success, a redirect, and the OAuth paths.
 */
export function authErrorEnvelope(pathname: string, status: number, contentType: string | null, body: Buffer): AppError | undefined {
  if (status < 400 || OWN_PROTOCOL_PATHS.some((pattern) => pattern.test(pathname))) return undefined;
  const code = codeOf(status);
  const message = (status < 500 || status === 503) && contentType && /json/i.test(contentType) ? messageOf(body) : undefined;
  return new AppError(code, message ?? defaultMessage(status));
}

/** The `message` of a JSON object body, bounded; undefined for anything else. */
function messageOf(body: Buffer): string | undefined {
  try {
    const message: unknown = (JSON.parse(body.toString("utf8")) as { message?: unknown } | null)?.message;
    return typeof message === "string" && message.trim() !== "" ? message.slice(0, 500) : undefined;
  } catch {
    return undefined;
  }
}

/** The API's code for a Better Auth status; statuses outside the table take the nearest code. */
function codeOf(status: number): ErrorCode {
  switch (status) {
    case 401:
      return "UNAUTHORIZED";
    case 403:
      return "FORBIDDEN";
    case 404:
      return "NOT_FOUND";
    case 409:
    case 422: // Better Auth's "user already exists" and other state conflicts
      return "CONFLICT";
    case 413:
      return "PAYLOAD_TOO_LARGE";
    case 429:
      return "RATE_LIMITED";
    case 503:
      return "SERVICE_UNAVAILABLE";
    default:
      return status >= 500 ? "INTERNAL_ERROR" : "VALIDATION_ERROR";
  }
}

function defaultMessage(status: number): string {
  if (status === 503) return "The auth service is unavailable; retry later";
  if (status >= 500) return "Internal error";
  return "The request was refused";
}
