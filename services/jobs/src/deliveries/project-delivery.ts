import type { Kysely } from "kysely";
import { preparedSql } from "@renderbus/db";
import type { webhooks } from "@renderbus/contracts";
import type { JobsDatabase, WebhookDeliveryTable as DeliveryRow } from "../db/jobs-database.js";

/** What the projection reads of a DeliveryUpdated (its trace context is for spans only). */
export type DeliveryState = Omit<webhooks.DeliveryUpdated, "trace">;

function rowOf(update: DeliveryState): DeliveryRow | undefined {
  // job.progress deliveries (up to one every 5 s per endpoint while a job runs) stay out of the job record: they are in
  // the org's delivery log only (docs/webhooks.md, "Progress events").
  if (!update.jobId || !update.deliveryId || update.event === "job.progress") return undefined;
  return {
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
}

const isNewer = (a: DeliveryRow, b: DeliveryRow) => a.attempts > b.attempts || (a.attempts === b.attempts && a.occurred_at > b.occurred_at);

/**
 * Upserts deliveries' states onto their jobs, in one statement for a group of updates. Idempotent and
 * order-insensitive: a redelivered or older update (fewer attempts, or the same attempts seen earlier) never
 * overwrites a newer one, whether it is already stored or in the same group (one row per delivery is kept, as an
 * upsert may touch a row only once). Updates without a job (batch and test events) are not part of any job record and
 * are ignored, and so are progress deliveries.
 */
export async function projectDeliveries(db: Kysely<JobsDatabase>, updates: DeliveryState[]): Promise<void> {
  const newest = new Map<string, DeliveryRow>();
  for (const update of updates) {
    const row = rowOf(update);
    const current = row && newest.get(row.id);
    if (row && (!current || isNewer(row, current))) newest.set(row.id, row);
  }
  if (newest.size === 0) return;
  const rows = [...newest.values()];
  const column = <T>(pick: (row: DeliveryRow) => T) => rows.map(pick);
  // Columns as arrays: the text is the same for every group size, so it is prepared once per connection.
  await preparedSql`
    insert into webhook_deliveries (id, org_id, job_id, event, status, attempts, last_attempt_at, next_attempt_at, last_response_status, last_error, occurred_at)
    select * from unnest(
      ${column((r) => r.id)}::text[], ${column((r) => r.org_id)}::text[], ${column((r) => r.job_id)}::text[], ${column((r) => r.event)}::text[],
      ${column((r) => r.status)}::text[], ${column((r) => r.attempts)}::int[], ${column((r) => r.last_attempt_at)}::bigint[],
      ${column((r) => r.next_attempt_at)}::bigint[], ${column((r) => r.last_response_status)}::int[], ${column((r) => r.last_error)}::text[],
      ${column((r) => r.occurred_at)}::bigint[])
    on conflict (id) do update set
      status = excluded.status, attempts = excluded.attempts, last_attempt_at = excluded.last_attempt_at,
      next_attempt_at = excluded.next_attempt_at, last_response_status = excluded.last_response_status,
      last_error = excluded.last_error, occurred_at = excluded.occurred_at
    where (excluded.attempts, excluded.occurred_at) > (webhook_deliveries.attempts, webhook_deliveries.occurred_at)`.execute(db);
}
