import { outboxRowsOf, preparedSql } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import { currentTraceHeaders } from "@renderbus/telemetry";
import { deliveryChange } from "../sending/decide-delivery.js";
import { deliveriesUpdatedMessages, deliveryUpdateOf, traceOfRow } from "./announcements.js";
import { DELIVERIES_CHANNEL } from "./delivery-queue.js";
import { gatedEndpointOf, lockSequenceCounters } from "./endpoint-flow.js";
import { DEFAULT_ENDPOINT_ID } from "../endpoints/endpoint-rules.js";
import type { DeliveryRow, DispatcherDb } from "./delivery.js";

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
  /** The endpoint it goes to; `ep_default` (the org's webhookUrl) when omitted. */
  endpointId?: string;
  /**
   * Stored `skipped` (its endpoint is disabled): never due, never leased, announced by the waiting sweep. A recover
   * gives it an attempt chain.
   */
  skipped?: boolean;
  /**
   * Its endpoint is FIFO: it gets the endpoint's next `sequence` (docs/webhooks.md, "Ordering"). The insert then runs
   * in a transaction that locks the endpoint's counter first (lockSequenceCounters).
   */
  ordered?: boolean;
}

/** Fresh deliveries the inserting replica takes at once, under its lease. */
export interface LeaseAtInsert {
  token: string;
  /** When the lease runs out; also the row's next_attempt_at, as for a claim. */
  until: number;
  /** Attempt slots this replica has free: at most this many rows are leased. */
  limit: number;
  orgMaxInFlight: number;
}

export interface InsertOptions {
  now?: number;
  /** Inserts up to `lease.limit` of the new rows already leased to the caller (see insertDeliveries). */
  lease?: LeaseAtInsert;
  /**
   * False for a delivery its caller attempts itself (a test event): it is never due, so no claim takes it, and it is
   * announced at once, in a second statement (run it in a transaction).
   */
  queued?: boolean;
}

/**
 * Inserts pending deliveries, due at once, in one statement, and returns the rows created. A delivery whose source
 * event has one already creates nothing (`source_event_id` is unique: a redelivered event writes nothing new).
 *
 * A queued delivery is not announced here: its first attempt follows at once and announces it (one DeliveryUpdated
 * per delivery instead of two); one that keeps waiting is announced as pending by announceWaitingDeliveries. An
 * unqueued one is announced at once (one DeliveriesUpdated for the statement): the gateway's webhook stream builds
 * test payloads from that announcement.
 *
 * With `lease`, up to `lease.limit` of the new rows are inserted already leased to the caller, within each org's
 * in-flight cap exactly as a claim counts it, so the caller attempts them at once: a fresh delivery then costs no
 * claim (a statement, a wake-up and a round trip on the path from event to attempt). They are stored as a claim leaves
 * them (`next_attempt_at` at the lease's end): if the caller dies before recording an attempt they are due again when
 * the lease runs out. Only rows left due notify the replicas' claim loops.
 *
 * Deliveries of gated endpoints (FIFO or rate-limited) are never leased here: only claimGatedDeliveries takes them.
 * An `ordered` delivery (not skipped, not already there) gets its endpoint's next sequence: the counters are locked
 * first, in the same transaction (one is opened when the caller has none), so sequences follow commit order.
 */
export async function insertDeliveries(db: DispatcherDb, deliveries: NewDelivery[], options: InsertOptions = {}): Promise<DeliveryRow[]> {
  if (deliveries.length === 0) return [];
  const ordered = deliveries.filter((d) => d.ordered === true && d.skipped !== true);
  if (ordered.length === 0) return insertStatement(db, deliveries, options);
  const run = async (trx: DispatcherDb) => {
    await lockSequenceCounters(trx, ordered.map((d) => ({ orgId: d.orgId, endpointId: d.endpointId ?? DEFAULT_ENDPOINT_ID })));
    return insertStatement(trx, deliveries, options);
  };
  return db.isTransaction ? run(db) : db.transaction().execute(run);
}

/** The columns of a new row that the statement decides (the rest is what the caller passed: see rowOf). */
type DecidedColumns = Pick<DeliveryRow, "id" | "status" | "next_attempt_at" | "lease_until" | "lease_token" | "announced" | "sequence">;

/** A created row from its input and what the statement decided: the same as `returning *`, without its bytes. */
function rowOf(delivery: NewDelivery, traceHeaders: string, now: number, decided: DecidedColumns): DeliveryRow {
  return {
    id: decided.id,
    org_id: delivery.orgId,
    event: delivery.event,
    source_event_id: delivery.sourceEventId,
    job_id: delivery.jobId,
    batch_id: delivery.batchId,
    url: delivery.url,
    body: delivery.body,
    status: decided.status,
    attempts: 0,
    chain_attempts: 0,
    next_attempt_at: decided.next_attempt_at,
    lease_until: decided.lease_until,
    lease_token: decided.lease_token,
    last_attempt_at: null,
    last_response_status: null,
    last_error: null,
    event_at: delivery.eventAt,
    first_attempt_at: null,
    created_at: now,
    trace_headers: traceHeaders,
    announced: decided.announced,
    endpoint_id: delivery.endpointId ?? DEFAULT_ENDPOINT_ID,
    sequence: decided.sequence,
  };
}

async function insertStatement(db: DispatcherDb, deliveries: NewDelivery[], { now = Date.now(), lease, queued = true }: InsertOptions): Promise<DeliveryRow[]> {
  const column = <T>(pick: (delivery: NewDelivery) => T) => deliveries.map(pick);
  const ids = deliveries.map(() => newId("del"));
  const traceHeaders = column((d) => JSON.stringify(d.traceHeaders ?? currentTraceHeaders()));
  const { limit = 0, orgMaxInFlight = 0 } = lease ?? {};
  const leased = lease ? deliveryChange({ type: "Leased", leaseToken: lease.token, until: lease.until }) : { lease_until: null, lease_token: null, next_attempt_at: null };
  const { rows } = await preparedSql<DecidedColumns>`
    with fresh as (
      select * from unnest(
        ${ids}::text[],
        ${column((d) => d.orgId)}::text[],
        ${column((d) => d.event)}::text[],
        ${column((d) => d.sourceEventId)}::text[],
        ${column((d) => d.jobId)}::text[],
        ${column((d) => d.batchId)}::text[],
        ${column((d) => d.url)}::text[],
        ${column((d) => d.body)}::text[],
        ${column((d) => d.eventAt)}::bigint[],
        ${traceHeaders}::text[],
        ${column((d) => d.endpointId ?? DEFAULT_ENDPOINT_ID)}::text[],
        ${column((d) => d.skipped === true)}::boolean[],
        ${column((d) => d.ordered === true)}::boolean[]
      ) with ordinality as v(id, org_id, event, source_event_id, job_id, batch_id, url, body, event_at, trace_headers, endpoint_id, skipped, ordered, n)
    ), numbered as (
      -- The counters were locked before this statement: its snapshot holds every delivery of an earlier holder.
      select f.n, q.last_sequence + row_number() over (partition by f.org_id, f.endpoint_id order by f.n) as sequence
      from fresh f
      join endpoint_queues q on q.org_id = f.org_id and q.endpoint_id = f.endpoint_id
      where f.ordered and not f.skipped
        and not exists (select 1 from deliveries x where x.source_event_id = f.source_event_id and x.endpoint_id = f.endpoint_id)
    ), busy as (
      select o.org_id, (select count(*)::int from deliveries l
                        where l.org_id = o.org_id and l.lease_until is not null and l.lease_until > ${now}) as in_flight
      from (select distinct org_id from fresh) o
    ), within_cap as (
      select f.*, not f.skipped and not ${gatedEndpointOf("f")} and busy.in_flight + row_number() over (partition by f.org_id, f.skipped order by f.n) <= ${orgMaxInFlight} as org_free
      from fresh f join busy on busy.org_id = f.org_id
    ), placed as (
      select w.*, w.org_free and count(*) filter (where w.org_free) over (order by w.n) <= ${limit} as leased
      from within_cap w
    ), created as (
      insert into deliveries (id, org_id, event, source_event_id, job_id, batch_id, url, body, status, attempts, chain_attempts,
                              next_attempt_at, lease_until, lease_token, event_at, created_at, trace_headers, announced, endpoint_id, sequence)
      select id, org_id, event, source_event_id, job_id, batch_id, url, body, case when skipped then 'skipped' else 'pending' end, 0, 0,
             case when leased then ${leased.next_attempt_at}::bigint when skipped then null else ${queued ? now : null}::bigint end,
             case when leased then ${leased.lease_until}::bigint end,
             case when leased then ${leased.lease_token}::text end,
             event_at, ${now}, trace_headers, ${!queued}::boolean and not skipped, endpoint_id, numbered.sequence
      -- A join, not a subquery per row: a CTE referenced once is inlined, and its sort ran again for every row.
      from placed left join numbered on numbered.n = placed.n order by placed.n
      on conflict (source_event_id, endpoint_id) do nothing
      -- Only what the statement decides: the caller has the rest (the body was most of the bytes read back).
      returning id, org_id, endpoint_id, status, next_attempt_at, lease_until, lease_token, announced, sequence
    ), counted as (
      update endpoint_queues q set last_sequence = greatest(q.last_sequence, c.top)
      from (select org_id, endpoint_id, max(sequence) as top from created where sequence is not null group by org_id, endpoint_id) c
      where q.org_id = c.org_id and q.endpoint_id = c.endpoint_id
    ), notified as (
      -- Rows left due wake the replicas' claim loops: one notification per statement, not per row.
      select pg_notify(${DELIVERIES_CHANNEL}, '') from created where lease_token is null and next_attempt_at is not null limit 1
    )
    select created.id, created.status, created.next_attempt_at, created.lease_until, created.lease_token, created.announced, created.sequence
    from created cross join (select count(*) from notified) as wake_up`.execute(db);
  const indexOf = new Map<string, number>(ids.map((id, n) => [id, n]));
  const created = rows.map((decided) => {
    const n = indexOf.get(decided.id)!;
    return rowOf(deliveries[n]!, traceHeaders[n]!, now, decided);
  });
  if (!queued && created.length > 0) {
    await db
      .insertInto("outbox")
      .values(outboxRowsOf(deliveriesUpdatedMessages(created.map((row) => deliveryUpdateOf(row, now, traceOfRow(row)))), now))
      .execute();
  }
  return created;
}

/** insertDeliveries for one delivery: its row, or undefined when its source event has a delivery already. */
export async function insertDelivery(db: DispatcherDb, delivery: NewDelivery, options: InsertOptions = {}): Promise<DeliveryRow | undefined> {
  const [row] = await insertDeliveries(db, [delivery], options);
  return row;
}
