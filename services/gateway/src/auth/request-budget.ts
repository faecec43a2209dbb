import { AppError } from "@renderbus/errors";
import { planOf } from "@renderbus/plans";
import type { AuthContext } from "@renderbus/rpc";
import type { GatewayDeps } from "../deps.js";
import type { RateLimitDecision } from "./rate-limiter.js";
import { clientSubjectOf } from "./client-address.js";

type BudgetDeps = Pick<GatewayDeps, "rateLimiter" | "plans" | "config">;

/**
 * Counts one request against its budget and sets the `RateLimit-*` headers; throws RATE_LIMITED (with
 * `Retry-After`) when it is spent. API keys and OAuth tokens share the org's plan limit, REST and MCP alike; the
 * dashboard (session cookie) has its own per-user budget so the UI stays usable on every plan (docs/concepts.md, "Rate limits"), and
 * all of an org's dashboard traffic together is capped too, so inviting members does not multiply what cookies can
 * do (`DASHBOARD_ORG_REQUESTS_PER_MINUTE`).
 */
export async function spendRequestBudget(auth: AuthContext, deps: BudgetDeps, setHeader: (name: string, value: string) => void): Promise<void> {
  let decision: RateLimitDecision;
  if (auth.credential === "session") {
    const [user, org] = await Promise.all([
      deps.rateLimiter.hit(`user:${auth.userId}`, deps.config.SESSION_REQUESTS_PER_MINUTE),
      deps.rateLimiter.hit(`dashboard-org:${auth.orgId}`, deps.config.DASHBOARD_ORG_REQUESTS_PER_MINUTE),
    ]);
    // The headers describe whichever budget runs out first.
    decision = !org.allowed || (user.allowed && org.remaining < user.remaining) ? org : user;
  } else {
    decision = await deps.rateLimiter.hit(`org:${auth.orgId}`, planOf(auth.plan, deps.plans).requestsPerMinute);
  }
  setHeader("RateLimit-Limit", String(decision.limit));
  setHeader("RateLimit-Remaining", String(decision.remaining));
  setHeader("RateLimit-Reset", String(decision.resetSeconds));
  if (!decision.allowed) throw rateLimited(decision);
}

/**
 * Counts one request against its client's budget (`IP_REQUESTS_PER_MINUTE`, per IPv4 address or IPv6 /64), before
 * its credential is resolved: requests with a bogus or missing credential count too, and a client over its budget
 * costs no auth lookup. @throws AppError RATE_LIMITED (with `Retry-After`) when it is spent.
 */
export async function spendClientBudget(ip: string, deps: BudgetDeps): Promise<void> {
  const decision = await deps.rateLimiter.hit(`ip:${clientSubjectOf(ip)}`, deps.config.IP_REQUESTS_PER_MINUTE);
  if (!decision.allowed) throw rateLimited(decision);
}

function rateLimited(decision: RateLimitDecision): AppError {
  return new AppError("RATE_LIMITED", `Rate limit of ${decision.limit} requests per minute exceeded`, {
    retryAfterSeconds: decision.resetSeconds,
  });
}
