import { sql, type Kysely } from "kysely";
import type { webhooks } from "@renderbus/contracts";
import type { JobsDatabase } from "../db/jobs-database.js";

/**
 * Upserts a delivery's state onto its job. Idempotent and order-insensitive: a redelivered or older update (fewer
 * attempts, or the same attempts seen earlier) never overwrites a newer one. Updates without a job (batch and test
 * events) are not part of any job record and are ignored.
 */
export async function projectDelivery(db: Kysely<JobsDatabase>, update: webhooks.DeliveryUpdated): Promise<void> {
  if (!update.jobId || !update.deliveryId) return;
  const row = {
    id: update.deliveryId,
    org_id: update.orgId,
    job_id: update.jobId,
    event: update.event,
    status: update.status,
    attempts: update.attempts ?? 0,
    last_attempt_at: update.lastAttemptAt ?? null,
    next_attempt_at: update.nextAttemptAt ?? null,
    last_response_status: update.lastResponseStatus ?? null,
    last_error: update.lastError ?? null,
    occurred_at: update.occurredAt ?? 0,
  };
  await db
    .insertInto("webhook_deliveries")
    .values(row)
    .onConflict((conflict) =>
      conflict
        .column("id")
        .doUpdateSet({
          status: (eb) => eb.ref("excluded.status"),
          attempts: (eb) => eb.ref("excluded.attempts"),
          last_attempt_at: (eb) => eb.ref("excluded.last_attempt_at"),
          next_attempt_at: (eb) => eb.ref("excluded.next_attempt_at"),
          last_response_status: (eb) => eb.ref("excluded.last_response_status"),
          last_error: (eb) => eb.ref("excluded.last_error"),
          occurred_at: (eb) => eb.ref("excluded.occurred_at"),
        })
        .where(sql<boolean>`(excluded.attempts, excluded.occurred_at) > (webhook_deliveries.attempts, webhook_deliveries.occurred_at)`),
    )
    .execute();
}
