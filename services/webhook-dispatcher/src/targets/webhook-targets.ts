import type { auth } from "@renderbus/contracts";
import type { PromiseClient } from "@renderbus/rpc";
import { loadPlans, planOf, type Plan, type PlanName } from "@renderbus/plans";
import { createRefreshAheadCache } from "../cache/refresh-ahead-cache.js";

/** Where an org's deliveries go. The secret stays in memory only (the auth service stores it encrypted). */
export interface WebhookTarget {
  orgId: string;
  plan: Plan;
  url: string | undefined;
  secret: string | undefined;
  /** The org's secret is stored but the auth service cannot open it: its deliveries fail unsent, never unsigned. */
  secretUnreadable?: boolean;
}

export interface WebhookTargets {
  /** The org's target, from a short-lived cache unless `fresh`. Throws when the auth service is unreachable. */
  get(orgId: string, options?: { fresh?: boolean }): Promise<WebhookTarget>;
  /** Drops a cached entry (on `auth.events.org.updated`). */
  forget(orgId: string): void;
  /** Drops every cached entry (after the connection that brings `auth.events.org.updated` was lost). */
  forgetAll(): void;
}

/** True when deliveries should be made for this target: a plan with webhooks and a URL. */
export function acceptsWebhooks(target: WebhookTarget): target is WebhookTarget & { url: string } {
  return target.plan.webhooks && !!target.url;
}

/**
 * Reads targets through `Auth.GetWebhookTarget`, caching each for `ttlMs` so a burst of events costs one call, and
 * reloading one in use before it expires (refresh-ahead-cache.ts). Concurrent lookups of one org share a single call.
 * Changes reach us by `forget` (`auth.events.org.updated`), or at the latest when the entry expires.
 */
export function createWebhookTargets(
  client: PromiseClient<auth.AuthClient>,
  { ttlMs, plans = loadPlans() }: { ttlMs: number; plans?: Record<PlanName, Plan> },
): WebhookTargets {
  return createRefreshAheadCache(async (orgId: string): Promise<WebhookTarget> => {
    const response = await client.getWebhookTarget({ orgId }, { deadlineMs: 5000 });
    return { orgId, plan: planOf(response.plan, plans), url: response.url || undefined, secret: response.secret || undefined, secretUnreadable: response.secretUnreadable === true };
  }, { ttlMs });
}
