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

/**
 * When a delivery's next attempt is due, as users see it: one being attempted has none yet (its `next_attempt_at` is
 * its lease's end, see claimDueDeliveries).
 */
function nextAttemptOf(row: DeliveryRow, now = Date.now()): number | null {
  return row.lease_until !== null && row.lease_until > now ? null : row.next_attempt_at;
}

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
 * Inserts a pending delivery due at once. Returns undefined when a delivery for the same source event exists already
 * (a redelivered event creates nothing new).
 *
 * A queued delivery is not announced here: its first attempt follows at once and announces it (one DeliveryUpdated
 * per delivery instead of two, which halved the relay's publishes and the jobs service's projections); one that
 * keeps waiting is announced as pending by announceWaitingDeliveries. An unqueued one (a test event, attempted by
 * its caller) is announced at once: the gateway's webhook stream builds test payloads from that announcement.
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
        announced: !queued,
      })),
    )
    .onConflict((conflict) => conflict.column("source_event_id").doNothing())
    .returningAll()
    .execute();
  if (rows.length === 0) return deliveries.map(() => undefined);
  if (queued) await notifyDue(trx);
  else await enqueueOutbox(trx, rows.map((row) => deliveryUpdatedMessage(row, now)), now);
  if (deliveries.length === 1) return rows;
  // Several rows are matched to their inputs by source event id (unique), so batched deliveries must carry one.
  const bySource = new Map(rows.map((row) => [row.source_event_id, row]));
  return deliveries.map((delivery) => (delivery.sourceEventId === null ? undefined : bySource.get(delivery.sourceEventId)));
}

/** Fresh deliveries the inserting replica takes at once, under its lease (see insertDeliveriesOfEvents). */
export interface LeaseAtInsert {
  token: string;
  /** When the lease runs out; also the row's next_attempt_at, as for a claim. */
  until: number;
  /** Attempt slots this replica has free: at most this many rows are leased. */
  limit: number;
  orgMaxInFlight: number;
}

/** The outcome of insertDeliveriesOfEvents. */
export interface InsertedDeliveries {
  /** Source event ids of the deliveries created. */
  created: Set<string>;
  /** Created deliveries leased to the caller (`lease`), to attempt now without a claim. */
  leased: DeliveryRow[];
}

/**
 * For a group of job events that only owe webhooks (no batch bookkeeping): inserts their deliveries, due at once and
 * unannounced (see insertDeliveries), in one statement (the ingest path runs it for every group of events). A
 * redelivered event creates nothing: its delivery exists already (`source_event_id` is unique), and an event that owes
 * no delivery writes nothing either way, so these events need no `processed_events` guard (it was a row and an index
 * entry per delivery).
 *
 * With `lease`, up to `lease.limit` of the new rows are inserted already leased to the caller, within each org's
 * in-flight cap exactly as a claim counts it, so the caller attempts them at once: a fresh delivery then costs no
 * claim (a statement, a wake-up and a round trip on the path from event to attempt). They are stored as a claim leaves
 * them (`next_attempt_at` at the lease's end): if the caller dies before recording an attempt they are due again when
 * the lease runs out. Only rows left unleased notify the replicas' claim loops.
 */
export async function insertDeliveriesOfEvents(db: Db, deliveries: NewDelivery[], { now = Date.now(), lease }: { now?: number; lease?: LeaseAtInsert } = {}): Promise<InsertedDeliveries> {
  if (deliveries.length === 0) return { created: new Set(), leased: [] };
  const column = <T>(pick: (delivery: NewDelivery) => T) => deliveries.map(pick);
  const { token = null, until = null, limit = 0, orgMaxInFlight = 0 } = lease ?? {};
  const { rows } = await sql<DeliveryRow>`
    with fresh as (
      select * from unnest(
        ${deliveries.map(() => newId("del"))}::text[],
        ${column((d) => d.orgId)}::text[],
        ${column((d) => d.event)}::text[],
        ${column((d) => d.sourceEventId)}::text[],
        ${column((d) => d.jobId)}::text[],
        ${column((d) => d.batchId)}::text[],
        ${column((d) => d.url)}::text[],
        ${column((d) => d.body)}::text[],
        ${column((d) => d.eventAt)}::bigint[],
        ${column((d) => JSON.stringify(d.traceHeaders ?? currentTraceHeaders()))}::text[]
      ) with ordinality as v(id, org_id, event, source_event_id, job_id, batch_id, url, body, event_at, trace_headers, n)
    ), busy as (
      select o.org_id, (select count(*)::int from deliveries l
                        where l.org_id = o.org_id and l.lease_until is not null and l.lease_until > ${now}) as in_flight
      from (select distinct org_id from fresh) o
    ), within_cap as (
      select f.*, busy.in_flight + row_number() over (partition by f.org_id order by f.n) <= ${orgMaxInFlight} as org_free
      from fresh f join busy on busy.org_id = f.org_id
    ), placed as (
      select w.*, w.org_free and count(*) filter (where w.org_free) over (order by w.n) <= ${limit} as leased
      from within_cap w
    ), created as (
      insert into deliveries (id, org_id, event, source_event_id, job_id, batch_id, url, body, status, attempts, chain_attempts,
                              next_attempt_at, lease_until, lease_token, event_at, created_at, trace_headers, announced)
      select id, org_id, event, source_event_id, job_id, batch_id, url, body, 'pending', 0, 0,
             case when leased then ${until}::bigint else ${now}::bigint end,
             case when leased then ${until}::bigint end,
             case when leased then ${token}::text end,
             event_at, ${now}, trace_headers, false
      from placed order by n
      on conflict (source_event_id) do nothing
      returning *
    )
    -- PostgreSQL folds identical notifications of one transaction into one: a wake-up per statement, not per row.
    select created.*, (select pg_notify(${DELIVERIES_CHANNEL}, '') where created.lease_token is null) as notified
    from created`.execute(db);
  const leased: DeliveryRow[] = [];
  for (const row of rows) {
    delete (row as Partial<{ notified: unknown }>).notified;
    if (row.lease_token !== null) leased.push(row);
  }
  return { created: new Set(rows.flatMap((row) => (row.source_event_id === null ? [] : [row.source_event_id]))), leased };
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

/**
 * Announces (as pending) deliveries created before `createdBefore` whose first attempt has not been recorded yet, so
 * a job record shows a delivery that waits behind a backlog, an org's in-flight cap or a crashed replica. Rows locked
 * by another replica's sweep are skipped; an attempt recorded meanwhile has announced its delivery itself.
 */
export async function announceWaitingDeliveries(db: Db, { createdBefore, limit = 500, now = Date.now() }: { createdBefore: number; limit?: number; now?: number }): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const { rows } = await sql<DeliveryRow>`
      update deliveries set announced = true
      where id in (
        select id from deliveries where not announced and created_at < ${createdBefore}
        order by created_at limit ${limit} for update skip locked)
      returning *`.execute(trx);
    const announced = rows.map((row) => ({ ...row, next_attempt_at: nextAttemptOf(row, now) }));
    await enqueueOutbox(trx, announced.map((row) => deliveryUpdatedMessage(row, now, row.trace_headers ? (JSON.parse(row.trace_headers) as Record<string, string>) : {})), now);
    return rows.length;
  });
}

/** Wakes sleeping senders in every replica once the transaction (or the statement) commits. */
export async function notifyDue(db: Db | Trx): Promise<void> {
  await sql`select pg_notify(${DELIVERIES_CHANNEL}, '')`.execute(db);
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
 * receiver cannot take every slot. A claimed row is due again when its lease runs out (`next_attempt_at` moves to
 * the lease's end), which is how a crashed holder's deliveries come back; recording the attempt sets the real next
 * time.
 */
export async function claimDueDeliveries(db: Db, { limit, orgMaxInFlight, leaseMs, leaseToken, now = Date.now() }: ClaimOptions): Promise<DeliveryRow[]> {
  if (limit <= 0) return [];
  // One statement rather than a transaction of select + update: a claim runs for nearly every delivery under load,
  // and each round trip (a socket write and a wake-up here, a backend cycle in PostgreSQL) was a large share of the
  // dispatcher's CPU. Orgs at their cap are filtered before the limit, so one org's backlog cannot crowd out the
  // others; the window then gives an org no more of the remaining candidates than its free slots. Rows in flight are
  // not due (their next_attempt_at is their lease's end), so the ordered scan starts at the first claimable row
  // instead of walking past every lease.
  const { rows } = await sql<DeliveryRow>`
    with candidates as (
      select d.id, d.org_id, d.next_attempt_at, busy.in_flight
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
      for update of d skip locked
    ), chosen as (
      select id from (
        select id, next_attempt_at, in_flight + row_number() over (partition by org_id order by next_attempt_at, id) as slot
        from candidates
      ) ranked
      where slot <= ${orgMaxInFlight}
      order by next_attempt_at, id
      limit ${limit}
    )
    update deliveries d set lease_until = ${now + leaseMs}, lease_token = ${leaseToken}, next_attempt_at = ${now + leaseMs}
    from chosen where d.id = chosen.id
    returning d.*`.execute(db);
  return rows;
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
  /** The delivery as claimed: its announcement is built from it and the attempt, before the write. */
  delivery: DeliveryRow;
  leaseToken: string;
  attempt: RecordedAttempt;
  /** The attempt's trace context, carried by its DeliveryUpdated event (batches mix attempts of many traces). */
  traceHeaders?: Record<string, string>;
}

/**
 * Stores attempts and their deliveries' new state, and announces them, in one statement (the sender batches attempts
 * that finish together: see GroupCommit). Returns, per attempt in order, the delivery's new row, or undefined when
 * the lease was lost meanwhile (another replica took the delivery over): that replica's outcome wins, and this
 * attempt writes neither an attempt row nor an announcement.
 *
 * One statement (data-modifying CTEs) instead of a transaction of four: this runs for every attempt, and each round
 * trip was a socket write and a wake-up here and a backend cycle in PostgreSQL. Its DeliveryUpdated is built
 * beforehand from the claimed row and the attempt (the same columns the update sets) and only inserted for rows
 * whose lease still matched.
 */
export async function recordAttempts(db: Db, attempts: AttemptToRecord[], now = Date.now()): Promise<Array<DeliveryRow | undefined>> {
  if (attempts.length === 0) return [];
  const column = <T>(pick: (a: AttemptToRecord) => T) => attempts.map(pick);
  const announcements = attempts.map((a) => deliveryUpdatedMessage(afterAttempt(a.delivery, a.attempt), now, a.traceHeaders));
  const { rows } = await sql<DeliveryRow>`
    with v as (
      select * from unnest(
        ${column((a) => a.delivery.id)}::text[],
        ${column((a) => a.leaseToken)}::text[],
        ${column((a) => a.attempt.attempt)}::int[],
        ${column((a) => a.attempt.status)}::text[],
        ${column((a) => a.attempt.nextAttemptAt)}::bigint[],
        ${column((a) => a.attempt.url)}::text[],
        ${column((a) => a.attempt.startedAt)}::bigint[],
        ${column((a) => a.attempt.responseStatus)}::int[],
        ${column((a) => a.attempt.error)}::text[],
        ${column((a) => a.attempt.latencyMs)}::int[],
        ${column((a) => a.attempt.responseExcerpt)}::text[],
        ${announcements.map((m) => m.messageId)}::text[],
        ${announcements.map((m) => m.subject)}::text[],
        ${announcements.map((m) => JSON.stringify(m.body))}::text[],
        ${announcements.map((m) => JSON.stringify(m.headers ?? {}))}::text[]
      ) as v(id, lease_token, attempt, status, next_attempt_at, url, started_at, response_status, error, latency_ms,
             response_excerpt, message_id, subject, body, headers)
    ), updated as (
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
        first_attempt_at = coalesce(d.first_attempt_at, v.started_at),
        announced = true
      from v
      where d.id = v.id and d.lease_token = v.lease_token
      returning d.*
    ), recorded as (
      insert into delivery_attempts (delivery_id, attempt, started_at, response_status, error, latency_ms, response_excerpt)
      select v.id, v.attempt, v.started_at, v.response_status, v.error, v.latency_ms, v.response_excerpt
      from v join updated on updated.id = v.id
      on conflict (delivery_id, attempt) do nothing
    ), announced as (
      insert into outbox (message_id, subject, body, headers, created_at)
      select v.message_id, v.subject, v.body::jsonb, v.headers::jsonb, ${now}
      from v join updated on updated.id = v.id
    )
    select * from updated`.execute(db);
  // A retry is due later: wake every replica's sender so it sleeps until then (after the commit, like a NOTIFY).
  if (rows.some((row) => row.next_attempt_at !== null)) await notifyDue(db);
  const byId = new Map(rows.map((row) => [row.id, row]));
  return attempts.map((a) => byId.get(a.delivery.id));
}

/** The row recordAttempts' update makes of a claimed delivery (for its announcement, built before the write). */
function afterAttempt(row: DeliveryRow, attempt: RecordedAttempt): DeliveryRow {
  return {
    ...row,
    attempts: attempt.attempt,
    status: attempt.status,
    next_attempt_at: attempt.nextAttemptAt,
    last_attempt_at: attempt.startedAt,
    last_response_status: attempt.responseStatus,
    last_error: attempt.error,
  };
}

/** Keeps a claimed delivery out of reach until `until` without counting an attempt (auth service unreachable). */
export async function postponeLease(db: Db, deliveryId: string, leaseToken: string, until: number): Promise<void> {
  await db.updateTable("deliveries").set({ lease_until: until, next_attempt_at: until }).where("id", "=", deliveryId).where("lease_token", "=", leaseToken).execute();
}

/** Gives a claimed delivery back untouched (shutdown mid-attempt): it is due again at once. */
export async function releaseLease(db: Db, deliveryId: string, leaseToken: string, now = Date.now()): Promise<void> {
  await db
    .updateTable("deliveries")
    .set({ lease_until: null, lease_token: null, next_attempt_at: now })
    .where("id", "=", deliveryId)
    .where("lease_token", "=", leaseToken)
    .execute();
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
    nextAttemptAt: nextAttemptOf(row) ?? undefined,
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

