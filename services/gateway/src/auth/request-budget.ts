import { AppError } from "@renderbus/errors";
import { planOf } from "@renderbus/plans";
import type { AuthContext } from "@renderbus/rpc";
import type { GatewayDeps } from "../deps.js";

/**
 * Counts one request against its budget and sets the `RateLimit-*` headers; throws RATE_LIMITED (with
 * `Retry-After`) when it is spent. API keys and OAuth tokens share the org's plan limit, REST and MCP alike; the
 * dashboard (session cookie) has its own per-user budget so the UI stays usable on every plan (SPEC section 2).
 */
export async function spendRequestBudget(
  auth: AuthContext,
  deps: Pick<GatewayDeps, "rateLimiter" | "plans" | "config">,
  setHeader: (name: string, value: string) => void,
): Promise<void> {
  const isSession = auth.credential === "session";
  const limit = isSession ? deps.config.SESSION_REQUESTS_PER_MINUTE : planOf(auth.plan, deps.plans).requestsPerMinute;
  const decision = await deps.rateLimiter.hit(isSession ? `user:${auth.userId}` : `org:${auth.orgId}`, limit);
  setHeader("RateLimit-Limit", String(decision.limit));
  setHeader("RateLimit-Remaining", String(decision.remaining));
  setHeader("RateLimit-Reset", String(decision.resetSeconds));
  if (!decision.allowed) {
    throw new AppError("RATE_LIMITED", `Rate limit of ${decision.limit} requests per minute exceeded`, {
      retryAfterSeconds: decision.resetSeconds,
    });
  }
}
