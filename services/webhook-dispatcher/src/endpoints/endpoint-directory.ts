import type { Selectable } from "kysely";
import type { SecretBox } from "@renderbus/secret-box";
import { createRefreshAheadCache } from "../cache/refresh-ahead-cache.js";
import type { DispatcherTables } from "../database.js";
import type { DeliveryRow, DispatcherDb } from "../deliveries/delivery.js";
import { acceptsWebhooks, type WebhookTarget, type WebhookTargets } from "../targets/webhook-targets.js";
import { DEFAULT_ENDPOINT_ID, endpointMatches, type Ordering, type RetryScheduleName } from "./endpoint-rules.js";

/** A stored endpoint row. */
export type EndpointRow = Selectable<DispatcherTables["endpoints"]>;

/** An endpoint ready to send to: URL and secrets in memory only. */
export interface ResolvedEndpoint {
  id: string;
  url: string;
  events: string[];
  enabled: boolean;
  ordering: Ordering;
  retrySchedule: RetryScheduleName;
  /** The newest secret (the seed header's), then the previous one while its grace lasts. Empty: unsigned. */
  secrets: string[];
  /**
   * Why a sealed secret of the endpoint does not open here (its key's kid left SECRETS_ENCRYPTION_KEYS, a `v1:` value
   * with SECRETS_ACCEPT_V1=false, a damaged value); never the secret. Its deliveries then fail at once, unsent
   * (see delivery-sender.ts): an operator's fix, not a retry, makes them deliverable again.
   */
  secretProblem?: string;
}

/** Every endpoint of an org, the default one first when the org has a webhookUrl. */
export interface OrgEndpoints {
  target: WebhookTarget;
  endpoints: ResolvedEndpoint[];
}

export interface EndpointDirectory {
  /** The org's endpoints, from a short-lived cache unless `fresh`. Throws when the auth service is unreachable. */
  get(orgId: string, options?: { fresh?: boolean }): Promise<OrgEndpoints>;
  /** Drops the org's cached entry and its target (a change of its endpoints or of its target). */
  forget(orgId: string): void;
  /** Drops every cached entry and target (changes may have been missed: a notification channel was down). */
  forgetAll(): void;
}

/** The default endpoint's settings when it has no row yet: every event, enabled, the seed schedule. */
export function defaultEndpointSettings(orgId: string, now: number): EndpointRow {
  return {
    org_id: orgId,
    id: DEFAULT_ENDPOINT_ID,
    url: null,
    description: "",
    events: ["*"],
    enabled: true,
    disabled_reason: null,
    disabled_at: null,
    ordering: "none",
    rate_limit_per_second: null,
    retry_schedule: "seed",
    secret_sealed: null,
    previous_secret_sealed: null,
    previous_secret_expires_at: null,
    last_recover_at: null,
    created_at: now,
    updated_at: now,
  };
}

/** The secrets that sign for a row now: its own (or the org's, for the default endpoint), then a previous one in grace. */
export function secretsOf(row: EndpointRow, ownSecret: string | undefined, box: SecretBox, now: number): string[] {
  const previous = row.previous_secret_sealed !== null && (row.previous_secret_expires_at ?? 0) > now ? box.open(row.previous_secret_sealed, row.org_id) : undefined;
  return [...new Set([ownSecret, previous].filter((secret): secret is string => !!secret))];
}

/**
 * The secrets of a row (see secretsOf), or the reason one does not open. A secret that does not open is not a passing
 * fault: throwing here failed the org's whole lookup, so every event of the org was redelivered each second and every
 * delivery claimed again every 2 s, forever, its healthy endpoints' included.
 */
function openedSecrets(row: EndpointRow, ownSecret: () => string | undefined, box: SecretBox, now: number): Pick<ResolvedEndpoint, "secrets" | "secretProblem"> {
  try {
    return { secrets: secretsOf(row, ownSecret(), box, now) };
  } catch (error) {
    return { secrets: [], secretProblem: error instanceof Error ? error.message : String(error) };
  }
}

/** Resolves rows and the org's target into endpoints. Pure but for opening sealed secrets. */
export function resolveEndpoints(target: WebhookTarget, rows: EndpointRow[], box: SecretBox, now = Date.now()): ResolvedEndpoint[] {
  const endpoints: ResolvedEndpoint[] = [];
  if (acceptsWebhooks(target)) {
    const settings = rows.find((row) => row.id === DEFAULT_ENDPOINT_ID) ?? defaultEndpointSettings(target.orgId, now);
    const ownSecret = () => {
      if (target.secretUnreadable) throw new Error("the org's webhook secret does not open in the auth service");
      return target.secret;
    };
    endpoints.push({ ...resolvedSettings(settings), url: target.url, ...openedSecrets(settings, ownSecret, box, now) });
  }
  for (const row of rows) {
    if (row.id === DEFAULT_ENDPOINT_ID || row.url === null) continue;
    const sealed = row.secret_sealed;
    endpoints.push({ ...resolvedSettings(row), url: row.url, ...openedSecrets(row, () => (sealed === null ? undefined : box.open(sealed, row.org_id)), box, now) });
  }
  return endpoints;
}

function resolvedSettings(row: EndpointRow): Omit<ResolvedEndpoint, "url" | "secrets"> {
  return { id: row.id, events: row.events, enabled: row.enabled, ordering: row.ordering, retrySchedule: row.retry_schedule };
}

/** The endpoints an event goes to (a disabled one too: its delivery is stored `skipped`). None without webhooks in the plan. */
export function endpointsFor(org: OrgEndpoints, event: string): ResolvedEndpoint[] {
  if (!org.target.plan.webhooks) return [];
  return org.endpoints.filter((endpoint) => endpointMatches(endpoint.events, event));
}

/** The endpoint a stored delivery goes to, or undefined when it is gone (deleted, or the org's webhookUrl removed). */
export function endpointOfDelivery(org: OrgEndpoints, row: Pick<DeliveryRow, "endpoint_id">): ResolvedEndpoint | undefined {
  return org.endpoints.find((endpoint) => endpoint.id === row.endpoint_id);
}

/**
 * Reads endpoints (rows of this schema, plus the org's webhook target from the auth service), caching each org's for
 * `ttlMs` and reloading one in use before it expires (refresh-ahead-cache.ts); concurrent lookups share one read. A
 * change is forgotten at once by every replica (endpoint-changes.ts, and `auth.events.org.updated` for targets);
 * `ttlMs` bounds how long a missed notice leaves an entry stale.
 */
export function createEndpointDirectory(db: DispatcherDb, targets: WebhookTargets, box: SecretBox, { ttlMs }: { ttlMs: number }): EndpointDirectory {
  const cache = createRefreshAheadCache(
    async (orgId: string, fresh: boolean): Promise<OrgEndpoints> => {
      const [target, rows] = await Promise.all([targets.get(orgId, { fresh }), db.selectFrom("endpoints").selectAll().where("org_id", "=", orgId).orderBy("created_at").execute()]);
      return { target, endpoints: resolveEndpoints(target, rows, box) };
    },
    { ttlMs },
  );
  return {
    get: (orgId, options) => cache.get(orgId, options),
    forget(orgId) {
      cache.forget(orgId);
      targets.forget(orgId);
    },
    forgetAll() {
      cache.forgetAll();
      targets.forgetAll();
    },
  };
}
