import { sql } from "kysely";
import { enqueueOutbox, preparedSql, type OutboxMessage } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import type { webhooks } from "@renderbus/contracts";
import { nextAttemptOf, type DeliveryRow, type DispatcherDb } from "./delivery.js";

/** The subject every delivery announcement goes out on: a DeliveriesUpdated, one message for many deliveries. */
export const DELIVERIES_UPDATED_SUBJECT = "webhooks.events.deliveries.updated";

/**
 * Most updates one DeliveriesUpdated carries (a few hundred bytes each): keeps a message far below NATS's 1 MB
 * max_payload, whose excess would stop the outbox relay on that row. Attempt groups (at most DISPATCHER_CONCURRENCY,
 * 64 by default) are smaller; recordAttempts splits a larger one.
 */
export const MAX_UPDATES_PER_MESSAGE = 500;

/**
 * A delivery's announced state (a DeliveryUpdated: the jobs service projects it onto the job record), with the trace
 * context of what changed it: one message mixes updates of many traces, so each carries its own in the body.
 */
export function deliveryUpdateOf(row: DeliveryRow, now: number, trace: Record<string, string> = {}): webhooks.DeliveryUpdated {
  return {
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
    trace,
  };
}

/** The message headers of a DeliveriesUpdated (it mixes orgs, so it names none: each update names its own). */
export const DELIVERIES_UPDATED_HEADERS = { "Rb-Event-Type": "deliveries.updated" } as const;

/**
 * The outbox messages announcing `updates`: one DeliveriesUpdated per {@link MAX_UPDATES_PER_MESSAGE}, each with a
 * new id (one publish and PubAck, and one message for the jobs service to consume, per group instead of per update).
 */
export function deliveriesUpdatedMessages(updates: webhooks.DeliveryUpdated[]): OutboxMessage[] {
  const messages: OutboxMessage[] = [];
  for (let start = 0; start < updates.length; start += MAX_UPDATES_PER_MESSAGE) {
    const body: webhooks.DeliveriesUpdated = { updates: updates.slice(start, start + MAX_UPDATES_PER_MESSAGE) };
    messages.push({ messageId: newId("evt"), subject: DELIVERIES_UPDATED_SUBJECT, body, headers: { ...DELIVERIES_UPDATED_HEADERS } });
  }
  return messages;
}

/** The stored trace context of a delivery (what created it), or none. */
export const traceOfRow = (row: DeliveryRow): Record<string, string> => (row.trace_headers ? (JSON.parse(row.trace_headers) as Record<string, string>) : {});

/**
 * Announces (as pending) deliveries created before `createdBefore` whose first attempt has not been recorded yet, so
 * a job record shows a delivery that waits behind a backlog, an org's in-flight cap or a crashed replica: one
 * DeliveriesUpdated per sweep (`limit` stays within MAX_UPDATES_PER_MESSAGE by default). Rows locked by another
 * replica's sweep are skipped; an attempt recorded meanwhile has announced its delivery itself.
 *
 * A delivery under a live lease is left alone: its attempt is under way and its record announces it. Swept, its row
 * stayed locked until the sweep's transaction committed, and the record of its attempt waited on that lock: on a
 * replica short of CPU (a sweep's transaction spanning its throttled round trips) records waited seconds, holding
 * their slots, so more deliveries went past the sweep's age and were announced twice, and the replica fell further
 * behind (capped at 0.075 core, a 1-replica round fell to 20 deliveries/s). A crashed replica's deliveries are swept
 * once their lease has run out.
 */
export async function announceWaitingDeliveries(db: DispatcherDb, { createdBefore, limit = 500, now = Date.now() }: { createdBefore: number; limit?: number; now?: number }): Promise<number> {
  // Every replica sweeps every second and nearly always finds nothing: one statement then, not a transaction's three
  // round trips (three of the seven an idle replica made each second, paid by every capped replica before any work).
  if (!(await hasWaitingDeliveries(db, createdBefore, now))) return 0;
  return db.transaction().execute(async (trx) => {
    const { rows } = await sql<DeliveryRow>`
      update deliveries set announced = true
      where id in (
        select id from deliveries where not announced and created_at < ${createdBefore}
          and (lease_until is null or lease_until <= ${now})
        order by created_at limit ${limit} for update skip locked)
      returning *`.execute(trx);
    const updates = rows.map((row) => deliveryUpdateOf({ ...row, next_attempt_at: nextAttemptOf(row, now) }, now, traceOfRow(row)));
    await enqueueOutbox(trx, deliveriesUpdatedMessages(updates), now);
    return rows.length;
  });
}

/** Whether a sweep would find anything (the same rows, locked or not): one index probe on the unannounced rows. */
async function hasWaitingDeliveries(db: DispatcherDb, createdBefore: number, now: number): Promise<boolean> {
  const { rows } = await preparedSql<{ found: boolean }>`
    select exists (
      select 1 from deliveries where not announced and created_at < ${createdBefore}
        and (lease_until is null or lease_until <= ${now})
    ) as found`.execute(db);
  return rows[0]?.found === true;
}
