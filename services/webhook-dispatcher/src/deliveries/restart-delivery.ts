import { enqueueOutbox } from "@renderbus/db";
import { currentTraceHeaders } from "@renderbus/telemetry";
import { RESTARTABLE_STATUSES, deliveryChange } from "../sending/decide-delivery.js";
import { deliveriesUpdatedMessages, deliveryUpdateOf } from "./announcements.js";
import { notifyDue } from "./delivery-queue.js";
import type { DeliveryRow, DispatcherDb } from "./delivery.js";

/**
 * Starts a new attempt chain for a finished delivery (manual retry): same id, attempt numbers continue, the
 * schedule starts over. Returns undefined when it is not finished (a chain is still running).
 */
export async function restartDelivery(db: DispatcherDb, orgId: string, deliveryId: string, now = Date.now()): Promise<DeliveryRow | undefined> {
  return db.transaction().execute(async (trx) => {
    const row = await trx
      .updateTable("deliveries")
      .set(deliveryChange({ type: "Restarted", now }))
      .where("id", "=", deliveryId)
      .where("org_id", "=", orgId)
      .where("status", "in", RESTARTABLE_STATUSES)
      .returningAll()
      .executeTakeFirst();
    if (!row) return undefined;
    await enqueueOutbox(trx, deliveriesUpdatedMessages([deliveryUpdateOf(row, now, currentTraceHeaders())]), now);
    await notifyDue(trx);
    return row;
  });
}
