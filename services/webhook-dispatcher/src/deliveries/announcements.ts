import { sql } from "kysely";
import { enqueueOutbox, type OutboxMessage } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import type { webhooks } from "@renderbus/contracts";
import { nextAttemptOf, type DeliveryRow, type DispatcherDb } from "./delivery.js";

/**
 * The outbox message announcing a delivery's state (a DeliveryUpdated: the jobs service projects it onto the job
 * record); `traceHeaders` carry the attempt's own trace in a batch.
 */
export function deliveryUpdatedMessage(row: DeliveryRow, now: number, traceHeaders: Record<string, string> = {}): OutboxMessage {
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
export async function announceWaitingDeliveries(db: DispatcherDb, { createdBefore, limit = 500, now = Date.now() }: { createdBefore: number; limit?: number; now?: number }): Promise<number> {
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
