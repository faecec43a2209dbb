import { sql } from "kysely";
import { newId } from "@renderbus/ids";
import type { SecretBox } from "@renderbus/secret-box";
import type { DispatcherDb } from "../deliveries/delivery.js";
import { notifyDue } from "../deliveries/delivery-queue.js";
import { defaultEndpointSettings, type EndpointRow } from "./endpoint-directory.js";
import { DEFAULT_ENDPOINT_ID, type Ordering, type RetryScheduleName } from "./endpoint-rules.js";

export interface NewEndpoint {
  url: string;
  description: string;
  events: string[];
  enabled: boolean;
  ordering: Ordering;
  rateLimitPerSecond: number | null;
  retrySchedule: RetryScheduleName;
  secret: string;
}

/** The org's endpoint rows (the default one's settings included, when it has some), oldest first. */
export async function endpointRows(db: DispatcherDb, orgId: string): Promise<EndpointRow[]> {
  return db.selectFrom("endpoints").selectAll().where("org_id", "=", orgId).orderBy("created_at").orderBy("id").execute();
}

export async function endpointRow(db: DispatcherDb, orgId: string, endpointId: string): Promise<EndpointRow | undefined> {
  return db.selectFrom("endpoints").selectAll().where("org_id", "=", orgId).where("id", "=", endpointId).executeTakeFirst();
}

/**
 * Inserts an endpoint unless the org has `max` already (`defaultCounts`: whether its webhookUrl is one of them). The
 * count and the insert are one statement under a per-org advisory lock, so concurrent creates cannot pass the limit.
 */
export async function insertEndpoint(db: DispatcherDb, orgId: string, endpoint: NewEndpoint, box: SecretBox, { max, defaultCounts, now = Date.now() }: { max: number; defaultCounts: boolean; now?: number }): Promise<EndpointRow | undefined> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext(${`endpoints:${orgId}`}))`.execute(trx);
    const { count } = await trx
      .selectFrom("endpoints")
      .select(sql<number>`count(*)::int`.as("count"))
      .where("org_id", "=", orgId)
      .where("id", "<>", DEFAULT_ENDPOINT_ID)
      .executeTakeFirstOrThrow();
    if (count + (defaultCounts ? 1 : 0) >= max) return undefined;
    return trx
      .insertInto("endpoints")
      .values({
        org_id: orgId,
        id: newId("ep"),
        url: endpoint.url,
        description: endpoint.description,
        events: endpoint.events,
        enabled: endpoint.enabled,
        ordering: endpoint.ordering,
        rate_limit_per_second: endpoint.rateLimitPerSecond,
        retry_schedule: endpoint.retrySchedule,
        secret_sealed: box.seal(endpoint.secret, orgId),
        disabled_reason: null,
        disabled_at: null,
        previous_secret_sealed: null,
        previous_secret_expires_at: null,
        last_recover_at: null,
        created_at: now,
        updated_at: now,
      })
      .returningAll()
      .executeTakeFirstOrThrow();
  });
}

/** The columns an update may set. */
export type EndpointChange = Partial<Pick<EndpointRow, "url" | "description" | "events" | "enabled" | "disabled_reason" | "disabled_at" | "ordering" | "rate_limit_per_second" | "retry_schedule" | "secret_sealed" | "previous_secret_sealed" | "previous_secret_expires_at">>;

/**
 * Applies a change to an endpoint; for `ep_default` the settings row is created on its first change. Returns the new
 * row, or undefined when there is no such endpoint.
 */
export async function updateEndpoint(db: DispatcherDb, orgId: string, endpointId: string, change: EndpointChange, now = Date.now()): Promise<EndpointRow | undefined> {
  if (endpointId === DEFAULT_ENDPOINT_ID) {
    return db
      .insertInto("endpoints")
      .values({ ...defaultEndpointSettings(orgId, now), ...change, url: null, secret_sealed: null })
      .onConflict((conflict) => conflict.columns(["org_id", "id"]).doUpdateSet({ ...withoutSecretAndUrl(change), updated_at: now }))
      .returningAll()
      .executeTakeFirst();
  }
  return db
    .updateTable("endpoints")
    .set({ ...change, updated_at: now })
    .where("org_id", "=", orgId)
    .where("id", "=", endpointId)
    .returningAll()
    .executeTakeFirst();
}

function withoutSecretAndUrl(change: EndpointChange): EndpointChange {
  const { url: _url, secret_sealed: _secret, ...rest } = change;
  return rest;
}

/** Deletes an endpoint (the default one: its settings). Its pending deliveries are skipped when they come due. */
export async function deleteEndpoint(db: DispatcherDb, orgId: string, endpointId: string): Promise<boolean> {
  const result = await db.deleteFrom("endpoints").where("org_id", "=", orgId).where("id", "=", endpointId).executeTakeFirst();
  return result.numDeletedRows > 0n;
}

/**
 * Disables an endpoint that is enabled now; returns its row when this call disabled it (so exactly one caller
 * announces it), undefined when it was disabled already or is gone.
 */
export async function disableEndpoint(db: DispatcherDb, orgId: string, endpointId: string, reason: string, now = Date.now()): Promise<EndpointRow | undefined> {
  const change = { enabled: false, disabled_reason: reason, disabled_at: now, updated_at: now };
  if (endpointId === DEFAULT_ENDPOINT_ID) {
    return db
      .insertInto("endpoints")
      .values({ ...defaultEndpointSettings(orgId, now), ...change })
      .onConflict((conflict) => conflict.columns(["org_id", "id"]).doUpdateSet(change).where("endpoints.enabled", "=", true))
      .returningAll()
      .executeTakeFirst();
  }
  return db.updateTable("endpoints").set(change).where("org_id", "=", orgId).where("id", "=", endpointId).where("enabled", "=", true).returningAll().executeTakeFirst();
}

/**
 * Takes the endpoint's recover slot, unless another recover ran less than `intervalMs` ago: then how long until the
 * next may run (the default endpoint's settings row is created for it).
 */
export async function takeRecoverSlot(db: DispatcherDb, orgId: string, endpointId: string, intervalMs: number, now = Date.now()): Promise<{ taken: true } | { taken: false; retryAfterMs: number }> {
  if (endpointId === DEFAULT_ENDPOINT_ID) {
    await db.insertInto("endpoints").values(defaultEndpointSettings(orgId, now)).onConflict((conflict) => conflict.columns(["org_id", "id"]).doNothing()).execute();
  }
  const taken = await db
    .updateTable("endpoints")
    .set({ last_recover_at: now })
    .where("org_id", "=", orgId)
    .where("id", "=", endpointId)
    .where((eb) => eb.or([eb("last_recover_at", "is", null), eb("last_recover_at", "<=", now - intervalMs)]))
    .executeTakeFirst();
  if (taken.numUpdatedRows > 0n) return { taken: true };
  const row = await db.selectFrom("endpoints").select("last_recover_at").where("org_id", "=", orgId).where("id", "=", endpointId).executeTakeFirst();
  const last = row?.last_recover_at == null ? now : Number(row.last_recover_at);
  return { taken: false, retryAfterMs: Math.max(0, last + intervalMs - now) };
}

/**
 * Starts a new attempt chain for up to `limit` of the endpoint's failed and skipped deliveries created in
 * [since, until), oldest first; returns how many. Attempt numbers continue, as for a manual retry.
 */
export async function recoverDeliveries(db: DispatcherDb, orgId: string, endpointId: string, { since, until, limit, now = Date.now() }: { since: number; until: number; limit: number; now?: number }): Promise<number> {
  const { rows } = await sql<{ id: string }>`
    update deliveries set status = 'pending', chain_attempts = 0, next_attempt_at = ${now}, lease_until = null, lease_token = null
    where id in (
      select id from deliveries
      where org_id = ${orgId} and endpoint_id = ${endpointId} and status in ('failed', 'skipped')
        and created_at >= ${since} and created_at < ${until}
      order by created_at
      limit ${limit}
      for update skip locked)
    returning id`.execute(db);
  if (rows.length > 0) await notifyDue(db);
  return rows.length;
}

/**
 * Whether the endpoint's deliveries have all failed for `windowMs`: at least `minFailures` failed deliveries since
 * its last success (or ever), the oldest of them created `windowMs` ago or more, and none succeeded since.
 */
export async function failingForWindow(db: DispatcherDb, orgId: string, endpointId: string, { windowMs, minFailures, now = Date.now() }: { windowMs: number; minFailures: number; now?: number }): Promise<boolean> {
  const { rows } = await sql<{ failures: number; oldest: string | null }>`
    with last_success as (
      select coalesce(max(created_at), -1) as at from deliveries
      where org_id = ${orgId} and endpoint_id = ${endpointId} and status = 'succeeded'
    )
    select count(*)::int as failures, min(created_at) as oldest from deliveries, last_success
    where org_id = ${orgId} and endpoint_id = ${endpointId} and status = 'failed' and created_at > last_success.at`.execute(db);
  const [row] = rows;
  if (!row || row.failures < minFailures || row.oldest === null) return false;
  return Number(row.oldest) <= now - windowMs;
}
