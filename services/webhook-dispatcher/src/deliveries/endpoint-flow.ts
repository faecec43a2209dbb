import { sql, type RawBuilder } from "kysely";
import { preparedSql } from "@renderbus/db";
import { deliveryChange } from "../sending/decide-delivery.js";
import type { DeliveryRow, DispatcherDb } from "./delivery.js";

/**
 * FIFO endpoints and throttling (docs/webhooks.md, "Ordering" and "Throttling"). Both are enforced by the claim, in
 * PostgreSQL, so they hold across replicas and crashes:
 * - a delivery to an endpoint with `ordering = 'fifo'` gets the endpoint's next `sequence` in the transaction that
 *   inserts it (the counter row of `endpoint_queues` is locked first, so sequences follow commit order, without gaps);
 * - deliveries of a "gated" endpoint (FIFO or with `rate_limit_per_second`) are never leased at insert nor claimed by
 *   claimDueDeliveries: only claimGatedDeliveries takes them, holding a per-endpoint advisory lock for its transaction;
 * - FIFO: only the endpoint's head (its pending delivery with the lowest sequence) is claimable, and only while none
 *   of its deliveries is leased; a failed attempt leaves the head pending (due at its retry), so it holds the queue
 *   until it succeeds or fails for good;
 * - rate limit: each claimed delivery gets a start slot, `1000 / rateLimitPerSecond` ms after the previous one on
 *   PostgreSQL's clock (`endpoint_queues.next_slot_at`), so no window of one second holds more slots than the limit;
 *   slots are given out at most RATE_SLOT_HORIZON_MS ahead and the sender starts no attempt before its slot (a replica
 *   short of CPU starts late; the attempt records its slot). The backlog stays pending (due) until slots are free:
 *   nothing is dropped.
 */

/** How far ahead of PostgreSQL's clock a claim gives out rate-limit slots (the sender waits for them). */
export const RATE_SLOT_HORIZON_MS = 1000;

/** First key of the endpoints' advisory locks (the second is a hash of org and endpoint): "rbep". */
const ENDPOINT_LOCK_CLASS = 0x72_62_65_70;

/** SQL condition: the endpoint of delivery alias `d` is gated (FIFO or rate-limited), i.e. only claimGatedDeliveries takes it. */
export function gatedEndpointOf(alias: string): RawBuilder<boolean> {
  const column = (name: string) => sql.ref(`${alias}.${name}`);
  return sql<boolean>`exists (select 1 from endpoints ge where ge.org_id = ${column("org_id")} and ge.id = ${column("endpoint_id")}
                              and (ge.ordering = 'fifo' or ge.rate_limit_per_second is not null))`;
}

/**
 * Locks the sequence counters of these endpoints (creating them) until the transaction ends, in a fixed order (no
 * deadlock between two inserters). Run it before the insert that assigns sequences: that statement's snapshot then
 * sees every delivery committed by an earlier holder, so sequences follow commit order and a redelivered event (whose
 * delivery exists) takes none.
 */
export async function lockSequenceCounters(trx: DispatcherDb, endpoints: Array<{ orgId: string; endpointId: string }>): Promise<void> {
  const keys = [...new Map(endpoints.map((e) => [`${e.orgId}\u0000${e.endpointId}`, e])).values()];
  if (keys.length === 0) return;
  await sql`
    insert into endpoint_queues (org_id, endpoint_id)
    select org_id, endpoint_id from unnest(${keys.map((e) => e.orgId)}::text[], ${keys.map((e) => e.endpointId)}::text[]) as k(org_id, endpoint_id)
    order by org_id, endpoint_id
    on conflict (org_id, endpoint_id) do update set last_sequence = endpoint_queues.last_sequence`.execute(trx);
}

export interface GatedClaimOptions {
  limit: number;
  /** Leases an org may hold across replicas, counted as claimDueDeliveries counts them. */
  orgMaxInFlight: number;
  /** The lease of a claimed delivery; RATE_SLOT_HORIZON_MS is added, as it may wait that long for its slot. */
  leaseMs: number;
  leaseToken: string;
  now?: number;
}

/** A delivery of a gated endpoint, claimed, with its rate-limit slot (none without a limit). */
export interface GatedClaim {
  row: DeliveryRow;
  /** How long after the claim its attempt may start: 0 without a limit. */
  delayMs: number;
  /** When its attempt may start, in epoch ms of PostgreSQL's clock; null without a limit. */
  slotAt: number | null;
}

/**
 * Whether any gated endpoint has a due delivery (one cheap statement before claimGatedDeliveries' transaction). It
 * runs before every claim, so its plan must not depend on statistics: written as a semi-join, PostgreSQL could (and
 * in the benchmark did, 1.3 ms a call) hash the whole deliveries table even with no gated endpoint at all; the
 * lateral probe with `limit 1` looks into deliveries once per gated endpoint, through deliveries_endpoint_pending.
 */
export async function hasGatedWork(db: DispatcherDb, now = Date.now()): Promise<boolean> {
  const { rows } = await preparedSql<{ found: boolean }>`
    select exists (
      select 1 from endpoints e
      cross join lateral (${dueDeliveryOf("e", now)}) due
      where e.ordering = 'fifo' or e.rate_limit_per_second is not null
    ) as found`.execute(db);
  return rows[0]?.found === true;
}

/**
 * SQL query: one due delivery of the endpoint of alias `e`, if any. Through deliveries_org_endpoint_due (the hashtext
 * term is there for it), it reads the endpoint's first queued entry and stops: a backlog waiting for its retries (not
 * due) or rows of other endpoints are never read, whatever the statistics say.
 */
function dueDeliveryOf(alias: string, now: number): RawBuilder<unknown> {
  const column = (name: string) => sql.ref(`${alias}.${name}`);
  return sql`select 1 from deliveries d
             where hashtext(d.org_id) = hashtext(${column("org_id")}) and d.org_id = ${column("org_id")} and d.endpoint_id = ${column("id")}
               and d.next_attempt_at is not null and d.next_attempt_at <= ${now} and d.status = 'pending'
             limit 1`;
}

/**
 * SQL query: the head of a FIFO endpoint's queue (its pending queued delivery first in sequence), when it is due and
 * nothing of the endpoint is leased. Each step reads what it needs whatever the endpoint's backlog: the head is the
 * first entry of deliveries_endpoint_pending, whose order is this one (sequence nulls first: an order the index did
 * not have read and sorted the whole backlog, 20,000 rows for a 20,000-delivery queue, each time a head was sent), and
 * the endpoint's leases are among its org's (deliveries_leased), not among its pending rows.
 */
export function dueFifoHeadOf(orgId: RawBuilder<unknown>, endpointId: RawBuilder<unknown>, now: number): RawBuilder<{ id: string; next_attempt_at: number }> {
  return sql`
    select head.id, head.next_attempt_at
    from (select d.id, d.next_attempt_at from deliveries d
          where d.org_id = ${orgId} and d.endpoint_id = ${endpointId} and d.status = 'pending'
            -- Queued ones only: a test event (never due) is sent outside the queue and holds nothing.
            and d.next_attempt_at is not null
          order by d.sequence nulls first, d.created_at, d.id
          limit 1) head
    where head.next_attempt_at <= ${now}
      and not exists (select 1 from deliveries x where x.org_id = ${orgId} and x.lease_until is not null and x.lease_until > ${now}
                      and x.endpoint_id = ${endpointId} and x.status = 'pending')`;
}

/**
 * Claims up to `limit` due deliveries of gated endpoints (FIFO, rate-limited or both), in one transaction:
 * 1. each gated endpoint with a due delivery is locked (`pg_try_advisory_xact_lock`; one another replica is claiming
 *    from is skipped). The lock is taken before the second statement's snapshot, so that statement sees every lease
 *    and slot committed by an earlier holder;
 * 2. per locked endpoint: FIFO, its head when due and nothing of it is leased; otherwise its due deliveries in due
 *    order; with a rate limit, only as many as have a slot within RATE_SLOT_HORIZON_MS; within each org's in-flight
 *    cap, as claimDueDeliveries counts it. They are leased, and the endpoint's next slot is stored.
 */
export async function claimGatedDeliveries(db: DispatcherDb, { limit, orgMaxInFlight, leaseMs, leaseToken, now = Date.now() }: GatedClaimOptions): Promise<GatedClaim[]> {
  if (limit <= 0) return [];
  return db.transaction().execute(async (trx) => {
    const { rows: locked } = await sql<{ org_id: string; endpoint_id: string }>`
      with candidates as materialized (
        -- The probe of hasGatedWork, for the same reason: as a semi-join this read every due row of the table.
        select e.org_id, e.id as endpoint_id from endpoints e
        cross join lateral (${dueDeliveryOf("e", now)}) due
        where e.ordering = 'fifo' or e.rate_limit_per_second is not null
      )
      select org_id, endpoint_id from candidates
      where pg_try_advisory_xact_lock(${ENDPOINT_LOCK_CLASS}::int, hashtext(org_id || '/' || endpoint_id))
      limit ${limit}`.execute(trx);
    if (locked.length === 0) return [];
    const lease = deliveryChange({ type: "Leased", leaseToken, until: now + leaseMs + RATE_SLOT_HORIZON_MS });
    const { rows } = await sql<DeliveryRow & { delay_ms: number; slot_at: number | null }>`
      with clock as materialized (
        select extract(epoch from clock_timestamp())::double precision * 1000 as now_ms
      ), settings as (
        select l.org_id, l.endpoint_id, e.ordering = 'fifo' as fifo, e.rate_limit_per_second as rate,
               greatest(coalesce(q.next_slot_at, 0), (select now_ms from clock)) as first_slot
        from unnest(${locked.map((l) => l.org_id)}::text[], ${locked.map((l) => l.endpoint_id)}::text[]) as l(org_id, endpoint_id)
        join endpoints e on e.org_id = l.org_id and e.id = l.endpoint_id
        left join endpoint_queues q on q.org_id = l.org_id and q.endpoint_id = l.endpoint_id
      ), picked as (
        select s.org_id, s.endpoint_id, s.rate, s.first_slot, c.id, c.n
        from settings s
        cross join lateral (
          select head.id, 1::bigint as n
          from (${dueFifoHeadOf(sql.ref("s.org_id"), sql.ref("s.endpoint_id"), now)}) head
          where s.fifo
          union all
          select due.id, row_number() over (order by due.next_attempt_at, due.id) as n
          from (select d.id, d.next_attempt_at from deliveries d
                -- The endpoint's earliest due rows, from deliveries_org_endpoint_due (the hashtext term is there for it).
                where not s.fifo and hashtext(d.org_id) = hashtext(s.org_id) and d.org_id = s.org_id and d.endpoint_id = s.endpoint_id
                  and d.status = 'pending'
                  and d.next_attempt_at is not null and d.next_attempt_at <= ${now}
                  and (d.lease_until is null or d.lease_until <= ${now})
                order by d.next_attempt_at, d.id
                limit ${limit}) due
        ) c
        where s.rate is null or s.first_slot + (c.n - 1) * 1000.0 / s.rate < (select now_ms from clock) + ${RATE_SLOT_HORIZON_MS}
      ), busy as (
        select o.org_id, (select count(*)::int from deliveries l
                          where l.org_id = o.org_id and l.lease_until is not null and l.lease_until > ${now}) as in_flight
        from (select distinct org_id from picked) o
      ), within_cap as (
        select p.* from (
          select p.*, busy.in_flight + row_number() over (partition by p.org_id order by p.n, p.endpoint_id) as slot
          from picked p join busy on busy.org_id = p.org_id
        ) p
        where p.slot <= ${orgMaxInFlight}
      ), chosen as (
        -- Round robin over the endpoints; each keeps a prefix of its own, so its slots stay contiguous.
        select * from within_cap order by n, org_id, endpoint_id limit ${limit}
      ), leased as (
        update deliveries d set lease_until = ${lease.lease_until}, lease_token = ${lease.lease_token}, next_attempt_at = ${lease.next_attempt_at}
        from chosen where d.id = chosen.id
        returning d.*, chosen.rate as chosen_rate, chosen.first_slot as chosen_first_slot, chosen.n as chosen_n
      ), slots as (
        insert into endpoint_queues (org_id, endpoint_id, next_slot_at)
        select org_id, endpoint_id, max(chosen_first_slot + chosen_n * 1000.0 / chosen_rate) from leased
        where chosen_rate is not null
        group by org_id, endpoint_id
        on conflict (org_id, endpoint_id) do update set next_slot_at = excluded.next_slot_at
      )
      select leased.*,
             case when chosen_rate is null then 0
                  else greatest(0, chosen_first_slot + (chosen_n - 1) * 1000.0 / chosen_rate - (select now_ms from clock)) end as delay_ms,
             case when chosen_rate is not null then chosen_first_slot + (chosen_n - 1) * 1000.0 / chosen_rate end as slot_at
      from leased`.execute(trx);
    type Claimed = DeliveryRow & { delay_ms: number; slot_at: number | null; chosen_rate?: unknown; chosen_first_slot?: unknown; chosen_n?: unknown };
    return rows.map(({ chosen_rate: _rate, chosen_first_slot: _slot, chosen_n: _n, delay_ms, slot_at, ...row }: Claimed) => ({
      row: row as DeliveryRow,
      delayMs: Math.ceil(Number(delay_ms)),
      slotAt: slot_at === null ? null : Math.ceil(Number(slot_at)),
    }));
  });
}
