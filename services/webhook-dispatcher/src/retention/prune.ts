import { sql, type Kysely } from "kysely";
import { deleteInBatches, type RetentionStep } from "@renderbus/db";
import type { DispatcherTables } from "../database.js";

/** How long a job's progress throttle row outlives its last `job.progress` delivery. */
export const PROGRESS_THROTTLE_RETENTION_MS = 60 * 60 * 1000;

export interface DispatcherRetention {
  /** Finished (and skipped) deliveries and their attempt logs (DELIVERY_RETENTION_DAYS, 30; docs/webhooks.md: kept 30 days). */
  deliveryRetentionMs: number;
  /** `processed_events` markers and completed batches' bookkeeping (PROCESSED_EVENT_RETENTION_DAYS, 14). */
  processedEventRetentionMs: number;
}

/**
 * What the dispatcher prunes (SECURITY-AUDIT finding 21):
 * - `deliveries` that are finished (succeeded, failed, or skipped while their endpoint was disabled; nothing owed, no
 *   lease), created and last attempted before the delivery retention; their `delivery_attempts` go with them
 *   (`on delete cascade`). A pending delivery stays. A skipped one holds the event's full body (signed result URLs),
 *   up to one per disabled endpoint per event, so it is not kept longer than the others: a recover window older than
 *   the retention finds nothing.
 * - `processed_events` markers, and completed batches with their `batch_terminal_jobs`, past the processed-event
 *   retention. They only guard against a job event delivered twice, and JetStream cannot deliver an event again once
 *   JOBS_EVENTS has dropped it (max age 7 days), which the retention (at least 8 days) outlasts. A batch that has not
 *   completed keeps its rows, however old.
 *
 * - `progress_throttle` rows not moved for an hour (their job stopped reporting progress).
 *
 * Never pruned: `outbox` (the relay deletes rows once JetStream has them; a row still there is unpublished).
 */
export function dispatcherRetentionSteps(db: Kysely<DispatcherTables>, retention: DispatcherRetention): RetentionStep[] {
  return [
    {
      name: "deliveries",
      prune: (now, stopping) => {
        const before = now - retention.deliveryRetentionMs;
        return deleteInBatches(
          db,
          "deliveries",
          sql<boolean>`created_at < ${before} and coalesce(last_attempt_at, 0) < ${before}
            and status in ('succeeded', 'failed', 'skipped') and next_attempt_at is null and lease_until is null`,
          { stopping },
        );
      },
    },
    {
      name: "processed_events",
      prune: (now, stopping) => deleteInBatches(db, "processed_events", sql<boolean>`processed_at < ${now - retention.processedEventRetentionMs}`, { stopping }),
    },
    {
      // The terminal jobs first: a sweep cut short leaves a batch row behind, which the next sweep finds again.
      name: "batch_terminal_jobs",
      prune: (now, stopping) =>
        deleteInBatches(
          db,
          "batch_terminal_jobs",
          sql<boolean>`batch_id in (select batch_id from batches where completed_at < ${now - retention.processedEventRetentionMs})`,
          { stopping },
        ),
    },
    {
      name: "batches",
      prune: (now, stopping) => deleteInBatches(db, "batches", sql<boolean>`completed_at < ${now - retention.processedEventRetentionMs}`, { stopping }),
    },
    {
      // A job reports progress every 0.5 s while it runs: a row untouched for an hour belongs to a finished job.
      name: "progress_throttle",
      prune: (now, stopping) => deleteInBatches(db, "progress_throttle", sql<boolean>`last_sent_at < ${now - PROGRESS_THROTTLE_RETENTION_MS}`, { stopping }),
    },
  ];
}
