import type { FastifyReply, FastifyRequest } from "fastify";
import { forbidden } from "@renderbus/errors";
import type { AuthContext } from "@renderbus/rpc";
import type { GatewayDeps } from "../deps.js";
import { spendClientBudget, spendRequestBudget } from "./request-budget.js";
import { CSRF_COOKIE, CSRF_HEADER, cookieValueOf, csrfCookie, csrfTokenFor, csrfTokenMatches } from "./csrf-token.js";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Counts the request against its client IP's budget, resolves its credential (Bearer API key or dashboard cookie),
 * guards cookie-authenticated writes against CSRF, and counts the request against its rate-limit budget.
 */
export async function authenticate(request: FastifyRequest, reply: FastifyReply, deps: GatewayDeps): Promise<AuthContext> {
  // Counted before the credential is resolved: no auth lookup happens until the budget says yes (a cached key's
  // Redis marks are read meanwhile, see CredentialResolver.resolve).
  const admitted = spendClientBudget(request.ip, deps);
  const auth = await deps.credentials.resolve({ authorization: request.headers.authorization, cookie: request.headers.cookie }, admitted);
  request.auth = auth;
  if (auth.credential === "session") guardCookieRequest(request, reply, deps.config);
  await spendRequestBudget(auth, deps, (name, value) => reply.header(name, value));
  return auth;
}

/**
 * Dashboard (cookie) requests: every response hands the session's CSRF token to the dashboard in the `rb_csrf`
 * cookie (when it does not hold the current one); writes must come from the PUBLIC_URL origin exactly (no
 * `http://` for an https deployment) and send that token back in `X-CSRF-Token`. Only the dashboard's own scripts
 * can read the cookie, so a cookie-driven script elsewhere cannot write, and so cannot spend the dashboard's
 * allowance on API work the org's plan does not pay for. @throws AppError FORBIDDEN otherwise.
 */
function guardCookieRequest(request: FastifyRequest, reply: FastifyReply, config: GatewayDeps["config"]): void {
  const session = cookieValueOf(request.headers.cookie, "rb_session") ?? "";
  const token = csrfTokenFor(config.OUTPUT_SIGNING_SECRET, session);
  if (!csrfTokenMatches(token, cookieValueOf(request.headers.cookie, CSRF_COOKIE))) {
    reply.header("set-cookie", csrfCookie(token, new URL(config.PUBLIC_URL).protocol === "https:"));
  }
  if (SAFE_METHODS.has(request.method)) return;
  if (request.headers.origin !== new URL(config.PUBLIC_URL).origin) throw forbidden("Cross-site request refused");
  if (!csrfTokenMatches(token, request.headers[CSRF_HEADER])) throw forbidden("Missing or invalid CSRF token (X-CSRF-Token)");
}
