import type { FastifyReply, FastifyRequest } from "fastify";
import { forbidden } from "@renderbus/errors";
import type { AuthContext } from "@renderbus/rpc";
import type { GatewayDeps } from "../deps.js";
import { spendRequestBudget } from "./request-budget.js";

const SAFE_METHODS = new Set(["GET", "HEAD", "OPTIONS"]);

/**
 * Resolves the request's credential (Bearer API key or dashboard cookie), refuses cross-site cookie-authenticated
 * writes (CSRF), and counts the request against its rate-limit budget.
 */
export async function authenticate(request: FastifyRequest, reply: FastifyReply, deps: GatewayDeps): Promise<AuthContext> {
  const auth = await deps.credentials.resolve({ authorization: request.headers.authorization, cookie: request.headers.cookie });
  request.auth = auth;
  if (auth.credential === "session" && !SAFE_METHODS.has(request.method)) assertSameOrigin(request, deps.config.PUBLIC_URL);
  await spendRequestBudget(auth, deps, (name, value) => reply.header(name, value));
  return auth;
}

/** Cookie-authenticated writes must come from the dashboard's own origin (browsers always send Origin on POST). */
function assertSameOrigin(request: FastifyRequest, publicUrl: string): void {
  const origin = request.headers.origin;
  const expected = new URL(publicUrl).origin;
  const host = request.headers.host;
  const sameAsHost = typeof origin === "string" && host !== undefined && (origin === `http://${host}` || origin === `https://${host}`);
  if (origin !== expected && !sameAsHost) throw forbidden("Cross-site request refused");
}
