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

/**
 * Claims up to `limit` due deliveries for this replica: rows locked by another claimer are skipped
 * (`FOR UPDATE SKIP LOCKED`), and an org already holding `orgMaxInFlight` leases gets no more, so one broken
 * receiver cannot take every slot. A claimed row is due again when its lease runs out (`next_attempt_at` moves to
 * the lease's end), which is how a crashed holder's deliveries come back; recording the attempt sets the real next
 * time. Deliveries of gated endpoints (FIFO or rate-limited) are left to claimGatedDeliveries (endpoint-flow.ts).
 */
export async function claimDueDeliveries(db: DispatcherDb, { limit, orgMaxInFlight, leaseMs, leaseToken, now = Date.now() }: ClaimOptions): Promise<DeliveryRow[]> {
  if (limit <= 0) return [];
  // One statement rather than a transaction of select + update: a claim runs for nearly every delivery under load,
  // and each round trip costs a socket write and a wake-up here and a backend cycle in PostgreSQL. Orgs at their cap
  // are filtered before the limit, so one org's backlog cannot crowd out the others; the window then gives an org no
  // more of the remaining candidates than its free slots. Rows in flight are not due (their next_attempt_at is their
  // lease's end), so the ordered scan starts at the first claimable row instead of walking past every lease.
  const lease = deliveryChange({ type: "Leased", leaseToken, until: now + leaseMs });
  const { rows } = await preparedSql<DeliveryRow>`
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
        and not ${gatedEndpointOf("d")}
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
    update deliveries d set lease_until = ${lease.lease_until}, lease_token = ${lease.lease_token}, next_attempt_at = ${lease.next_attempt_at}
    from chosen where d.id = chosen.id
    returning d.*`.execute(db);
  return rows;
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
