import { sql } from "kysely";
import { preparedSql } from "@renderbus/db";
import { deliveryChange, type RowIndependentTransition } from "../sending/decide-delivery.js";
import type { DeliveryRow, DispatcherDb } from "./delivery.js";
import { gatedEndpointOf } from "./endpoint-flow.js";

/** NOTIFY channel that wakes every replica's sender when a delivery becomes due. */
export const DELIVERIES_CHANNEL = "dispatcher_deliveries_due";

/** Wakes sleeping senders in every replica once the transaction (or the statement) commits. */
export async function notifyDue(db: DispatcherDb): Promise<void> {
  await sql`select pg_notify(${DELIVERIES_CHANNEL}, '')`.execute(db);
}

export interface ClaimOptions {
  limit: number;
  orgMaxInFlight: number;
  leaseMs: number;
  leaseToken: string;
  now?: number;
}

/** What a claim leased. */
export interface DueClaim {
  rows: DeliveryRow[];
  /**
   * The claim leased rows and walked to find some (an org at its cap or a gated endpoint headed the queue): it may
   * have left claimable rows its bounds did not reach, so a caller with free slots claims again at once rather than
   * at its next wake-up. False when it leased nothing.
   */
  walked: boolean;
}

/**
 * The claim's window per row it may take: rows read from the head of the due queue, and both the endpoints with due
 * work the walk gathers and the free slots it fills with their rows (see claimDueDeliveries).
 */
const CLAIM_WINDOW_PER_ROW = 4;

/** Endpoints the walk may visit per row of the window: each visit is one descent of an index. */
const WALK_VISITS_PER_WINDOW_ROW = 4;

/**
 * Claims up to `limit` due deliveries for this replica: rows locked by another claimer are skipped
 * (`FOR UPDATE SKIP LOCKED`), and an org already holding `orgMaxInFlight` leases gets no more, so one broken
 * receiver cannot take every slot. A claimed row is due again when its lease runs out (`next_attempt_at` moves to
 * the lease's end), which is how a crashed holder's deliveries come back; recording the attempt sets the real next
 * time. Deliveries of gated endpoints (FIFO or rate-limited) are left to claimGatedDeliveries (endpoint-flow.ts).
 * Oldest due first across orgs; how far that holds when an org at its cap or a gated endpoint heads the queue is said
 * below.
 */
export async function claimDueDeliveries(db: DispatcherDb, { limit, orgMaxInFlight, leaseMs, leaseToken, now = Date.now() }: ClaimOptions): Promise<DueClaim> {
  if (limit <= 0) return { rows: [], walked: false };
  // One statement rather than a transaction of select + update: a claim runs for nearly every delivery under load,
  // and each round trip costs a socket write and a wake-up here and a backend cycle in PostgreSQL. Rows in flight are
  // not due (their next_attempt_at is their lease's end), so the scans start at the first claimable row instead of
  // walking past every lease. Two sources of rows, so that no claim's cost grows with the backlog of an org at its cap
  // or of a gated endpoint (which only claimGatedDeliveries takes, at its own pace: a 1/s endpoint's backlog stays due
  // for hours):
  // - `head`: the first `window` due rows in due order (deliveries_due), whatever their org or endpoint, locked as they
  //   are read (so concurrent claims take disjoint rows); each of their orgs' leases is counted once, and whether a
  //   row's endpoint is gated is looked up once per row of head, after its limit. Rows of capped orgs and of gated
  //   endpoints are read and locked, not taken: the lock lasts until the statement ends, and a claimGatedDeliveries
  //   that updates such a row meanwhile waits that long (it never skips it; the claim itself never waits for a lock).
  //   Locking only the rows taken would mean reading head unlocked, and concurrent claims would then all read the same
  //   first rows and collide on them instead of each locking its own stretch of the queue. Usually head is all: when
  //   it holds `limit` rows of ordinary endpoints of orgs below their cap, those are the oldest claimable rows there
  //   are, and when the queue has fewer due rows than `window`, head saw every one of them. (Filtering capped orgs or
  //   gated endpoints inside this scan, before its limit, read their whole backlog on every claim: 370 ms a claim
  //   behind 400,000 rows of one slow receiver, 300-470 ms behind 200,000 rows of a 1/s endpoint.)
  // - `walk`, only when head is full yet yields fewer than `limit`: an org at its cap, a gated endpoint (or rows other
  //   replicas hold) heads the queue. It steps from endpoint to endpoint, org by org, down deliveries_org_endpoint_due,
  //   one index descent each (PostgreSQL 15 has no skip scan: a recursive CTE is one), reading each endpoint's earliest
  //   queued time on the way. An endpoint with due work, neither in head nor gated (looked up once per step, never per
  //   row), gets its org's leases counted (once per run of steps through one org). It stops after `window` endpoints
  //   with due work and free slots, or `window * WALK_VISITS_PER_WINDOW_ROW` endpoints visited (ones with only future
  //   retries or leases count too), so its cost is bounded by `limit`, not by any backlog nor the number of orgs or
  //   endpoints. Of the endpoints found, the ones with the oldest due work are taken until their free slots (each
  //   counted as its org's) fill the window, and each gives its earliest due rows, at most its org's free slots (the
  //   same index again). Stepping by endpoint rather than by org is what lets the walk pass a gated endpoint in one
  //   descent and still reach its org's other endpoints: skipping head's orgs whole, an org's own ordinary deliveries
  //   would wait behind its 1/s endpoint's backlog until that drained.
  // Orgs are walked in the order of hashtext(org_id), from a random point, wrapping around. Org ids are ULIDs, which
  // sort by creation: walked in id order, a bounded walk would favour the oldest orgs on every claim once more orgs
  // have due work than it visits. From a random point in hash order no org is favoured: which ones a claim reaches
  // is random, and within what it finds the oldest due work goes first. Below the bounds (few orgs and endpoints, as
  // usual) the walk sees every endpoint, but a claim can still take fewer or other rows than the oldest claimable
  // ones when it walks: an endpoint with rows in head is not walked (its rows beyond head wait for a later claim), and
  // each endpoint found is budgeted its org's free slots however few rows it has, which can fill the window
  // (claim-properties.int.test.ts names both). A claim that walked says so (`walked`), and the sender then claims
  // again at once: that costs a round trip, never a lease past a cap. Head's rows all precede the walk's (the walk
  // skips head's endpoints, and its rows lie beyond head), so the merge by due time takes head's claimable rows first. The window then gives an org no more
  // than its free slots, counting its rows from head and from each of its endpoints together.
  const lease = deliveryChange({ type: "Leased", leaseToken, until: now + leaseMs });
  const window = limit * CLAIM_WINDOW_PER_ROW;
  // A random point of hashtext's int4 range.
  const walkStart = Math.floor(Math.random() * 2 ** 32) - 2 ** 31;
  const { rows } = await preparedSql<DeliveryRow & { walked: boolean }>`
    with recursive head as materialized (
      select d.id, d.org_id, d.endpoint_id, d.next_attempt_at
      from deliveries d
      where d.next_attempt_at is not null and d.next_attempt_at <= ${now}
        and (d.lease_until is null or d.lease_until <= ${now})
      order by d.next_attempt_at
      limit ${window}
      for update of d skip locked
    ), head_counted as materialized (
      -- Each org's leases are counted once, on its first row: joining a per-org CTE back to the rows would be planned on
      -- guessed row counts (a nested loop of rows by orgs). A gated row takes no slot of its org.
      select id, org_id, next_attempt_at, gated, max(counted) over (partition by org_id) as in_flight,
             count(*) filter (where not gated) over (partition by org_id order by next_attempt_at, id) as org_row
      from (
        select h.id, h.org_id, h.next_attempt_at, ${gatedEndpointOf("h")} as gated,
               case when row_number() over (partition by h.org_id) = 1
                    then (select count(*)::int from deliveries l
                          where l.org_id = h.org_id and l.lease_until is not null and l.lease_until > ${now}) end as counted
        from head h
      ) firsts
    ), walk (org_hash, org_id, endpoint_id, first_due, in_flight, wrapped, visits, found) as (
      -- Where the walk starts (no org has an empty id), if head was full yet left slots unfilled.
      select ${walkStart}::int, ''::text, ''::text, null::bigint, null::int, false, 0, 0
      where (select count(*) from head_counted) = ${window}
        and (select count(*) from head_counted where not gated and in_flight + org_row <= ${orgMaxInFlight}) < ${limit}
      union all
      -- The next endpoint (wrapping around once), with its earliest queued time; its org's leases when it has due work
      -- the walk may take.
      select step.org_hash, step.org_id, step.endpoint_id, step.next_attempt_at, busy.in_flight, step.wrapped, w.visits + 1,
             w.found + coalesce((busy.in_flight < ${orgMaxInFlight})::int, 0)
      from walk w
      cross join lateral (
        (select hashtext(d.org_id) as org_hash, d.org_id, d.endpoint_id, d.next_attempt_at, w.wrapped as wrapped from deliveries d
         where d.next_attempt_at is not null and (hashtext(d.org_id), d.org_id, d.endpoint_id) > (w.org_hash, w.org_id, w.endpoint_id)
         order by hashtext(d.org_id), d.org_id, d.endpoint_id, d.next_attempt_at limit 1)
        union all
        (select hashtext(d.org_id), d.org_id, d.endpoint_id, d.next_attempt_at, true from deliveries d
         where not w.wrapped and d.next_attempt_at is not null
         order by hashtext(d.org_id), d.org_id, d.endpoint_id, d.next_attempt_at limit 1)
        limit 1
      ) step
      cross join lateral (
        select case when step.next_attempt_at <= ${now}
                         and (step.org_id, step.endpoint_id) not in (select org_id, endpoint_id from head)
                         and not ${gatedEndpointOf("step")}
                    -- The org's count from the step before, when that one counted it.
                    then coalesce(case when w.org_id = step.org_id then w.in_flight end,
                                  (select count(*)::int from deliveries l
                                   where l.org_id = step.org_id and l.lease_until is not null and l.lease_until > ${now})) end as in_flight
        -- Kept a subquery, or its count is inlined into both columns above and runs twice.
        offset 0
      ) busy
      where w.visits < ${window * WALK_VISITS_PER_WINDOW_ROW} and w.found < ${window}
        and not (step.wrapped and step.org_hash >= ${walkStart})
    ), walked as (
      select org_id, endpoint_id, in_flight from (
        select org_id, endpoint_id, in_flight,
               coalesce(sum(${orgMaxInFlight} - in_flight) over (order by first_due, org_id, endpoint_id rows between unbounded preceding and 1 preceding), 0) as slots_before
        from walk where in_flight < ${orgMaxInFlight}
      ) found
      where slots_before < ${window}
    ), candidates as (
      select id, org_id, next_attempt_at, in_flight from head_counted where not gated
      union all
      select c.id, w.org_id, c.next_attempt_at, w.in_flight
      from walked w
      cross join lateral (
        select d.id, d.next_attempt_at from deliveries d
        where hashtext(d.org_id) = hashtext(w.org_id) and d.org_id = w.org_id and d.endpoint_id = w.endpoint_id
          and d.next_attempt_at is not null and d.next_attempt_at <= ${now}
          and (d.lease_until is null or d.lease_until <= ${now})
        order by d.next_attempt_at
        limit least(${orgMaxInFlight} - w.in_flight, ${limit})
        for update of d skip locked
      ) c
    ), chosen as (
      select id from (
        select id, next_attempt_at, in_flight + row_number() over (partition by org_id order by next_attempt_at, id) as slot
        from candidates
      ) ranked
      where slot <= ${orgMaxInFlight}
      order by next_attempt_at, id
      limit ${limit}
    )
    update deliveries d set lease_until = ${lease.lease_until}, lease_token = ${lease.lease_token}, next_attempt_at = ${lease.next_attempt_at}
    from chosen where d.id = chosen.id
    returning d.*, exists (select 1 from walk) as walked`.execute(db);
  return { rows: rows.map(({ walked: _, ...row }) => row), walked: rows[0]?.walked === true };
}

/** When the next not-yet-due delivery becomes due (to sleep exactly until then), or undefined. */
export async function nextDueAt(db: DispatcherDb, now = Date.now()): Promise<number | undefined> {
  const { rows } = await preparedSql<{ next: number | null }>`select min(next_attempt_at) as next from deliveries where next_attempt_at > ${now}`.execute(db);
  return rows[0]?.next ?? undefined;
}

/**
 * The earliest due time of any delivery, past ones included (a row due now, a lease that ran out), or undefined when
 * none waits: whether a poll has anything to claim, from the first entry of the due-time index.
 */
export async function earliestDueAt(db: DispatcherDb): Promise<number | undefined> {
  const { rows } = await preparedSql<{ earliest: number | null }>`select min(next_attempt_at) as earliest from deliveries where next_attempt_at is not null`.execute(db);
  return rows[0]?.earliest ?? undefined;
}

/** Keeps a claimed delivery out of reach until `until` without counting an attempt (auth service unreachable). */
export async function postponeLease(db: DispatcherDb, deliveryId: string, leaseToken: string, until: number): Promise<void> {
  await changeHeldDelivery(db, deliveryId, leaseToken, { type: "Postponed", until });
}

/** Gives a claimed delivery back untouched (shutdown mid-attempt): it is due again at once. */
export async function releaseLease(db: DispatcherDb, deliveryId: string, leaseToken: string, now = Date.now()): Promise<void> {
  await changeHeldDelivery(db, deliveryId, leaseToken, { type: "Released", now });
}

/** Applies a transition to a delivery while `leaseToken` still holds it (a replica that took it over wins). */
async function changeHeldDelivery(db: DispatcherDb, deliveryId: string, leaseToken: string, transition: RowIndependentTransition): Promise<void> {
  await db.updateTable("deliveries").set(deliveryChange(transition)).where("id", "=", deliveryId).where("lease_token", "=", leaseToken).execute();
}

/**
 * Stores a held delivery as `skipped` (its endpoint is disabled) without an attempt; returns its row, or undefined
 * when the lease was lost meanwhile. The waiting sweep announces it if nothing has yet.
 */
export async function skipHeldDelivery(db: DispatcherDb, deliveryId: string, leaseToken: string): Promise<DeliveryRow | undefined> {
  return db
    .updateTable("deliveries")
    .set({ status: "skipped", next_attempt_at: null, lease_until: null, lease_token: null })
    .where("id", "=", deliveryId)
    .where("lease_token", "=", leaseToken)
    .returningAll()
    .executeTakeFirst();
}
