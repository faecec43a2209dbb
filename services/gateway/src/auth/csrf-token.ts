import { createHmac, hkdfSync, timingSafeEqual } from "node:crypto";

/** The cookie the gateway gives the dashboard its CSRF token in: readable by the dashboard's own scripts only. */
export const CSRF_COOKIE = "rb_csrf";
/** The header the dashboard sends the token back in on every state-changing request. */
export const CSRF_HEADER = "x-csrf-token";

const keys = new Map<string, Buffer>();

/** The HMAC key of CSRF tokens, derived from the gateway's signing secret (one secret for replicas to share). */
function keyOf(secret: string): Buffer {
  let key = keys.get(secret);
  if (!key) {
    key = Buffer.from(hkdfSync("sha256", secret, "", "renderbus dashboard csrf token v1", 32));
    keys.set(secret, key);
  }
  return key;
}

/**
 * The CSRF token of a dashboard session: an HMAC of the session cookie's value, so it is bound to that session and
 * cannot be made up without the secret. Another site can send the cookie (a form, a fetch with credentials) but can
 * neither read this token nor plant a working one (cookie tossing from a sibling domain or an http:// injection).
 */
export function csrfTokenFor(secret: string, sessionCookieValue: string): string {
  return createHmac("sha256", keyOf(secret)).update(sessionCookieValue).digest("base64url");
}

/** Compares a presented token with the expected one in constant time. */
export function csrfTokenMatches(expected: string, presented: string | string[] | undefined): boolean {
  if (typeof presented !== "string") return false;
  const a = Buffer.from(expected);
  const b = Buffer.from(presented);
  return a.length === b.length && timingSafeEqual(a, b);
}

/** The value of one cookie in a Cookie header (the first one of that name), undecoded. */
export function cookieValueOf(cookieHeader: string | undefined, name: string): string | undefined {
  if (!cookieHeader) return undefined;
  for (const part of cookieHeader.split(";")) {
    const separator = part.indexOf("=");
    if (separator > 0 && part.slice(0, separator).trim() === name) return part.slice(separator + 1).trim();
  }
  return undefined;
}

/** The `Set-Cookie` value that hands the token to the dashboard (lives as long as a session can). */
export function csrfCookie(token: string, secure: boolean): string {
  return `${CSRF_COOKIE}=${token}; Path=/; Max-Age=${30 * 24 * 60 * 60}; SameSite=Strict${secure ? "; Secure" : ""}`;
}
