import type { Kysely, Selectable } from "kysely";
import type { DispatcherTables } from "../database.js";

/** A stored delivery. */
export type DeliveryRow = Selectable<DispatcherTables["deliveries"]>;
/** One stored attempt of a delivery. */
export type AttemptRow = Selectable<DispatcherTables["delivery_attempts"]>;
/** The dispatcher's database, or a transaction on it. */
export type DispatcherDb = Kysely<DispatcherTables>;

/**
 * When a delivery's next attempt is due, as users see it: one being attempted has none yet (its `next_attempt_at` is
 * its lease's end, see claimDueDeliveries).
 */
export function nextAttemptOf(row: DeliveryRow, now = Date.now()): number | null {
  return row.lease_until !== null && row.lease_until > now ? null : row.next_attempt_at;
}
