import { sql, type Kysely } from "kysely";
import { deleteInBatches, type RetentionStep } from "@renderbus/db";
import type { JobsDatabase } from "../db/jobs-database.js";

/** Resend records outlive any dispatched timeout a deployment would set. */
const RESEND_RECORD_MS = 24 * 60 * 60 * 1000;

export interface JobsRetention {
  /** Idempotency keys older than this answer nothing any more (IDEMPOTENCY_TTL_MS, 24 h). */
  idempotencyTtlMs: number;
  /** Finished webhook deliveries mirrored on job records go after this (DELIVERY_RETENTION_DAYS, as the dispatcher). */
  deliveryRetentionMs: number;
}

/**
 * What the jobs service prunes (SECURITY-AUDIT finding 21):
 * - `idempotency_keys` past their TTL: a claim already treats them as absent, so deleting them changes no answer.
 * - `webhook_deliveries` (the job record's copy of the dispatcher's deliveries) once finished and past the
 *   dispatcher's retention, which has deleted the delivery itself by then. A pending one is kept whatever its age.
 * - `dispatch_resends` a day after their last resend: by then the dispatched timeout has ended the job.
 * (`unqueued_dispatches` rows are deleted by the watchdog's pass once their job is no longer dispatched.)
 *
 * Never pruned: `events` (the event store is the source of truth of every job and batch), `job_views` and
 * `batch_views` (jobs stay listable), and `outbox`, whose rows the relay deletes once JetStream has them; a row
 * still there is unpublished and must stay.
 */
export function jobsRetentionSteps(db: Kysely<JobsDatabase>, retention: JobsRetention): RetentionStep[] {
  return [
    {
      name: "idempotency_keys",
      prune: (now, stopping) => deleteInBatches(db, "idempotency_keys", sql<boolean>`created_at < ${now - retention.idempotencyTtlMs}`, { stopping }),
    },
    {
      name: "webhook_deliveries",
      prune: (now, stopping) =>
        deleteInBatches(db, "webhook_deliveries", sql<boolean>`occurred_at < ${now - retention.deliveryRetentionMs} and status <> 'pending'`, { stopping }),
    },
    {
      name: "dispatch_resends",
      prune: (now, stopping) => deleteInBatches(db, "dispatch_resends", sql<boolean>`last_at < ${now - RESEND_RECORD_MS}`, { stopping }),
    },
  ];
}
