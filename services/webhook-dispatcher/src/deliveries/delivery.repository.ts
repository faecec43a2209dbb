import { sql, type Kysely, type Selectable, type Transaction } from "kysely";
import { enqueueOutbox, type OutboxMessage } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import { currentTraceHeaders } from "@renderbus/telemetry";
import type { webhooks } from "@renderbus/contracts";
import type { DeliveryStatus, DispatcherTables } from "../database.js";

export type DeliveryRow = Selectable<DispatcherTables["deliveries"]>;
export type AttemptRow = Selectable<DispatcherTables["delivery_attempts"]>;
type Db = Kysely<DispatcherTables>;
type Trx = Transaction<DispatcherTables>;

/** NOTIFY channel that wakes every replica's sender when a delivery becomes due. */
export const DELIVERIES_CHANNEL = "dispatcher_deliveries_due";

export interface NewDelivery {
  orgId: string;
  event: string;
  sourceEventId: string | null;
  jobId: string | null;
  batchId: string | null;
  url: string;
  body: string;
  eventAt: number;
  /** Trace context of the causing event (the active one when omitted): every attempt becomes a span of it. */
  traceHeaders?: Record<string, string>;
}

/**
 * Inserts a pending delivery due at once and announces it (DeliveryUpdated). Returns undefined when a delivery for
 * the same source event exists already (a redelivered event creates nothing new).
 */
export async function insertDelivery(trx: Trx, delivery: NewDelivery, now = Date.now(), { queued = true } = {}): Promise<DeliveryRow | undefined> {
  const [row] = await insertDeliveries(trx, [delivery], now, { queued });
  return row;
}

/** insertDelivery for many deliveries in one statement; the result is in input order. */
export async function insertDeliveries(trx: Trx, deliveries: NewDelivery[], now = Date.now(), { queued = true } = {}): Promise<Array<DeliveryRow | undefined>> {
  if (deliveries.length === 0) return [];
  const rows = await trx
    .insertInto("deliveries")
    .values(
      deliveries.map((delivery) => ({
        id: newId("del"),
        org_id: delivery.orgId,
        event: delivery.event,
        source_event_id: delivery.sourceEventId,
        job_id: delivery.jobId,
        batch_id: delivery.batchId,
        url: delivery.url,
        body: delivery.body,
        status: "pending" as const,
        attempts: 0,
        chain_attempts: 0,
        next_attempt_at: queued ? now : null,
        lease_until: null,
        lease_token: null,
        last_attempt_at: null,
        last_response_status: null,
        last_error: null,
        event_at: delivery.eventAt,
        first_attempt_at: null,
        created_at: now,
        trace_headers: JSON.stringify(delivery.traceHeaders ?? currentTraceHeaders()),
      })),
    )
    .onConflict((conflict) => conflict.column("source_event_id").doNothing())
    .returningAll()
    .execute();
  if (rows.length === 0) return deliveries.map(() => undefined);
  await enqueueOutbox(trx, rows.map((row) => deliveryUpdatedMessage(row, now)), now);
  if (queued) await notifyDue(trx);
  if (deliveries.length === 1) return rows;
  // Several rows are matched to their inputs by source event id (unique), so batched deliveries must carry one.
  const bySource = new Map(rows.map((row) => [row.source_event_id, row]));
  return deliveries.map((delivery) => (delivery.sourceEventId === null ? undefined : bySource.get(delivery.sourceEventId)));
}

/** Queues a DeliveryUpdated for the outbox relay (the jobs service projects it onto the job record). */
export async function announce(trx: Trx, row: DeliveryRow, now = Date.now()): Promise<void> {
  await enqueueOutbox(trx, [deliveryUpdatedMessage(row, now)], now);
}

/** The outbox message announcing a delivery's state; `traceHeaders` carry the attempt's own trace in a batch. */
function deliveryUpdatedMessage(row: DeliveryRow, now: number, traceHeaders: Record<string, string> = {}): OutboxMessage {
  const body: webhooks.DeliveryUpdated = {
    deliveryId: row.id,
    orgId: row.org_id,
    ...(row.job_id ? { jobId: row.job_id } : {}),
    event: row.event,
    status: row.status,
    attempts: row.attempts,
    ...(row.last_attempt_at !== null ? { lastAttemptAt: row.last_attempt_at } : {}),
    ...(row.next_attempt_at !== null ? { nextAttemptAt: row.next_attempt_at } : {}),
    ...(row.last_response_status !== null ? { lastResponseStatus: row.last_response_status } : {}),
    ...(row.last_error !== null ? { lastError: row.last_error } : {}),
    occurredAt: now,
  };
  return {
    messageId: newId("evt"),
    subject: "webhooks.events.delivery.updated",
    body,
    headers: { ...traceHeaders, "Rb-Event-Type": "delivery.updated", "Rb-Org-Id": row.org_id },
  };
}

/** Wakes sleeping senders in every replica once the transaction commits. */
export async function notifyDue(trx: Trx): Promise<void> {
  await sql`select pg_notify(${DELIVERIES_CHANNEL}, '')`.execute(trx);
}

export interface ClaimOptions {
  limit: number;
  orgMaxInFlight: number;
  leaseMs: number;
  leaseToken: string;
  now?: number;
}

/**
 * Claims up to `limit` due deliveries for this replica: rows locked by another claimer are skipped
 * (`FOR UPDATE SKIP LOCKED`), and an org already holding `orgMaxInFlight` leases gets no more, so one broken
 * receiver cannot take every slot. A lease that runs out (its holder crashed) makes the row claimable again.
 */
export async function claimDueDeliveries(db: Db, { limit, orgMaxInFlight, leaseMs, leaseToken, now = Date.now() }: ClaimOptions): Promise<DeliveryRow[]> {
  if (limit <= 0) return [];
  return db.transaction().execute(async (trx) => {
    // Orgs at their cap are filtered in SQL, so a backlog of one org's due rows cannot crowd out the others.
    const candidates = await sql<{ id: string; org_id: string; in_flight: number }>`
      select d.id, d.org_id, busy.in_flight
      from deliveries d
      cross join lateral (
        select count(*)::int as in_flight from deliveries l
        where l.org_id = d.org_id and l.lease_until is not null and l.lease_until > ${now}
      ) busy
      where d.next_attempt_at is not null and d.next_attempt_at <= ${now}
        and (d.lease_until is null or d.lease_until <= ${now})
        and busy.in_flight < ${orgMaxInFlight}
      order by d.next_attempt_at
      limit ${limit * 4}
      for update of d skip locked`.execute(trx);
    const taken = new Map<string, number>();
    const ids: string[] = [];
    for (const candidate of candidates.rows) {
      const count = taken.get(candidate.org_id) ?? candidate.in_flight;
      if (count >= orgMaxInFlight) continue;
      taken.set(candidate.org_id, count + 1);
      ids.push(candidate.id);
      if (ids.length >= limit) break;
    }
    if (ids.length === 0) return [];
    return trx
      .updateTable("deliveries")
      .set({ lease_until: now + leaseMs, lease_token: leaseToken })
      .where("id", "in", ids)
      .returningAll()
      .execute();
  });
}

/** When the next not-yet-due delivery becomes due (to sleep exactly until then), or undefined. */
export async function nextDueAt(db: Db, now = Date.now()): Promise<number | undefined> {
  const row = await db
    .selectFrom("deliveries")
    .select((eb) => eb.fn.min("next_attempt_at").as("next"))
    .where("next_attempt_at", ">", now)
    .executeTakeFirst();
  return row?.next ?? undefined;
}

export interface RecordedAttempt {
  attempt: number;
  startedAt: number;
  responseStatus: number | null;
  error: string | null;
  latencyMs: number;
  responseExcerpt: string | null;
  status: DeliveryStatus;
  nextAttemptAt: number | null;
  url: string;
}

export interface AttemptToRecord {
  deliveryId: string;
  leaseToken: string;
  attempt: RecordedAttempt;
  /** The attempt's trace context, carried by its DeliveryUpdated event (batches mix attempts of many traces). */
  traceHeaders?: Record<string, string>;
}

/**
 * Stores attempts and their deliveries' new state, and announces them, in one transaction (the sender batches
 * attempts that finish together: see GroupCommit). Returns, per attempt in order, the delivery's new row, or
 * undefined when the lease was lost meanwhile (another replica took the delivery over): that replica's outcome wins.
 */
export async function recordAttempts(db: Db, attempts: AttemptToRecord[], now = Date.now()): Promise<Array<DeliveryRow | undefined>> {
  if (attempts.length === 0) return [];
  const column = <T>(pick: (a: AttemptToRecord) => T) => attempts.map(pick);
  return db.transaction().execute(async (trx) => {
    const updated = await sql<DeliveryRow>`
      update deliveries d set
        attempts = v.attempt,
        chain_attempts = d.chain_attempts + 1,
        status = v.status,
        next_attempt_at = v.next_attempt_at,
        lease_until = null,
        lease_token = null,
        url = v.url,
        last_attempt_at = v.started_at,
        last_response_status = v.response_status,
        last_error = v.error,
        first_attempt_at = coalesce(d.first_attempt_at, v.started_at)
      from unnest(
        ${column((a) => a.deliveryId)}::text[],
        ${column((a) => a.leaseToken)}::text[],
        ${column((a) => a.attempt.attempt)}::int[],
        ${column((a) => a.attempt.status)}::text[],
        ${column((a) => a.attempt.nextAttemptAt)}::bigint[],
        ${column((a) => a.attempt.url)}::text[],
        ${column((a) => a.attempt.startedAt)}::bigint[],
        ${column((a) => a.attempt.responseStatus)}::int[],
        ${column((a) => a.attempt.error)}::text[]
      ) as v(id, lease_token, attempt, status, next_attempt_at, url, started_at, response_status, error)
      where d.id = v.id and d.lease_token = v.lease_token
      returning d.*`.execute(trx);
    const byId = new Map(updated.rows.map((row) => [row.id, row]));
    const kept = attempts.filter((a) => byId.has(a.deliveryId));
    if (kept.length === 0) return attempts.map(() => undefined);
    await trx
      .insertInto("delivery_attempts")
      .values(
        kept.map((a) => ({
          delivery_id: a.deliveryId,
          attempt: a.attempt.attempt,
          started_at: a.attempt.startedAt,
          response_status: a.attempt.responseStatus,
          error: a.attempt.error,
          latency_ms: a.attempt.latencyMs,
          response_excerpt: a.attempt.responseExcerpt,
        })),
      )
      .onConflict((conflict) => conflict.columns(["delivery_id", "attempt"]).doNothing())
      .execute();
    await enqueueOutbox(trx, kept.map((a) => deliveryUpdatedMessage(byId.get(a.deliveryId)!, now, a.traceHeaders)), now);
    if (updated.rows.some((row) => row.next_attempt_at !== null)) await notifyDue(trx);
    return attempts.map((a) => byId.get(a.deliveryId));
  });
}

/** Stores one attempt (see recordAttempts). */
export async function recordAttempt(db: Db, deliveryId: string, leaseToken: string, attempt: RecordedAttempt, now = Date.now()): Promise<DeliveryRow | undefined> {
  const [row] = await recordAttempts(db, [{ deliveryId, leaseToken, attempt }], now);
  return row;
}

/** Keeps a claimed delivery out of reach until `until` without counting an attempt (auth service unreachable). */
export async function postponeLease(db: Db, deliveryId: string, leaseToken: string, until: number): Promise<void> {
  await db.updateTable("deliveries").set({ lease_until: until }).where("id", "=", deliveryId).where("lease_token", "=", leaseToken).execute();
}

/** Gives a claimed delivery back untouched (shutdown mid-attempt): it is due again at once. */
export async function releaseLease(db: Db, deliveryId: string, leaseToken: string): Promise<void> {
  await db.updateTable("deliveries").set({ lease_until: null, lease_token: null }).where("id", "=", deliveryId).where("lease_token", "=", leaseToken).execute();
}

export interface ListFilter {
  orgId: string;
  status?: string | undefined;
  event?: string | undefined;
  jobId?: string | undefined;
  limit: number;
  /** Id of the last delivery of the previous page (ids sort by creation time). */
  before?: string | undefined;
}

/** The org's deliveries, newest first, with their attempt logs. */
export async function listDeliveries(db: Db, filter: ListFilter): Promise<{ rows: DeliveryRow[]; attempts: Map<string, AttemptRow[]>; hasMore: boolean }> {
  let query = db.selectFrom("deliveries").selectAll().where("org_id", "=", filter.orgId);
  if (filter.status) query = query.where("status", "=", filter.status as DeliveryStatus);
  if (filter.event) query = query.where("event", "=", filter.event);
  if (filter.jobId) query = query.where("job_id", "=", filter.jobId);
  if (filter.before) query = query.where("id", "<", filter.before);
  const rows = await query.orderBy("id", "desc").limit(filter.limit + 1).execute();
  const hasMore = rows.length > filter.limit;
  const page = rows.slice(0, filter.limit);
  return { rows: page, attempts: await attemptsOf(db, page.map((row) => row.id)), hasMore };
}

export async function attemptsOf(db: Db | Trx, ids: string[]): Promise<Map<string, AttemptRow[]>> {
  const byDelivery = new Map<string, AttemptRow[]>();
  if (ids.length === 0) return byDelivery;
  const attempts = await db.selectFrom("delivery_attempts").selectAll().where("delivery_id", "in", ids).orderBy("attempt").execute();
  for (const attempt of attempts) {
    const list = byDelivery.get(attempt.delivery_id) ?? [];
    list.push(attempt);
    byDelivery.set(attempt.delivery_id, list);
  }
  return byDelivery;
}

export async function findDelivery(db: Db | Trx, orgId: string, deliveryId: string): Promise<DeliveryRow | undefined> {
  return db.selectFrom("deliveries").selectAll().where("id", "=", deliveryId).where("org_id", "=", orgId).executeTakeFirst();
}

/**
 * Starts a new attempt chain for a finished delivery (manual retry): same id, attempt numbers continue, the
 * schedule starts over. Returns undefined when it is not finished (a chain is still running).
 */
export async function restartDelivery(db: Db, orgId: string, deliveryId: string, now = Date.now()): Promise<DeliveryRow | undefined> {
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable("deliveries")
      .set({ status: "pending", chain_attempts: 0, next_attempt_at: now, lease_until: null, lease_token: null })
      .where("id", "=", deliveryId)
      .where("org_id", "=", orgId)
      .where("status", "in", ["succeeded", "failed"])
      .returningAll()
      .executeTakeFirst();
    if (!row) return undefined;
    await announce(trx, row, now);
    await notifyDue(trx);
    return row;
  });
}

/** A stored delivery as the gRPC `Delivery` message. */
export function toDeliveryMessage(row: DeliveryRow, attempts: AttemptRow[] = []): webhooks.Delivery {
  return {
    id: row.id,
    orgId: row.org_id,
    event: row.event,
    jobId: row.job_id ?? undefined,
    batchId: row.batch_id ?? undefined,
    status: row.status,
    attempts: row.attempts,
    lastAttemptAt: row.last_attempt_at ?? undefined,
    nextAttemptAt: row.next_attempt_at ?? undefined,
    lastResponseStatus: row.last_response_status ?? undefined,
    lastError: row.last_error ?? undefined,
    url: row.url,
    createdAt: row.created_at,
    attemptLog: attempts.map((attempt) => ({
      attempt: attempt.attempt,
      startedAt: attempt.started_at,
      responseStatus: attempt.response_status ?? undefined,
      error: attempt.error ?? undefined,
      latencyMs: attempt.latency_ms,
      responseExcerpt: attempt.response_excerpt ?? undefined,
    })),
  };
}

