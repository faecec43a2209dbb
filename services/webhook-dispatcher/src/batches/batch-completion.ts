import { sql, type Transaction } from "kysely";
import { enqueueOutbox } from "@renderbus/db";
import type { webhooks } from "@renderbus/contracts";
import type { DispatcherTables } from "../database.js";
import type { BatchCounts } from "@renderbus/webhook-payloads";

type Trx = Transaction<DispatcherTables>;

/** A terminal job status that counts toward a batch's completion. */
export type TerminalOutcome = "completed" | "failed" | "cancelled";

/** Records a batch's size (from `batch.created`); a redelivered event changes nothing. */
export async function recordBatchCreated(trx: Trx, batch: { batchId: string; orgId: string; jobCount: number; createdAt: number }): Promise<void> {
  await trx
    .insertInto("batches")
    .values({ batch_id: batch.batchId, org_id: batch.orgId, job_count: batch.jobCount, created_at: batch.createdAt, completed_at: null })
    .onConflict((conflict) => conflict.column("batch_id").doNothing())
    .execute();
}

/** Counts a job as terminal in its batch once: `unique (batch_id, job_id)` absorbs duplicates and redeliveries. */
export async function recordTerminalJob(trx: Trx, entry: { batchId: string; jobId: string; outcome: TerminalOutcome }, now = Date.now()): Promise<void> {
  await trx
    .insertInto("batch_terminal_jobs")
    .values({ batch_id: entry.batchId, job_id: entry.jobId, outcome: entry.outcome, recorded_at: now })
    .onConflict((conflict) => conflict.columns(["batch_id", "job_id"]).doNothing())
    .execute();
}

export interface CompletedBatch {
  batchId: string;
  orgId: string;
  jobCount: number;
  counts: BatchCounts;
  createdAt: number;
  completedAt: number;
}

/**
 * Marks the batch completed when every job is terminal, and returns it to exactly one caller.
 *
 * Must run in a transaction that starts *after* the terminal job's insert committed: two replicas inserting the last
 * two jobs at once would each miss the other's uncommitted row. Run afterwards, the later of them sees both, and
 * `completed_at is null` in the conditional update lets only one caller win (the other re-checks the row after the
 * winner's commit and matches nothing). Callers also run it on redelivery, so a crash between the two steps is
 * healed by the next delivery of the event.
 */
export async function completeBatchIfDone(trx: Trx, batchId: string, now = Date.now()): Promise<CompletedBatch | undefined> {
  const row = await trx
    .updateTable("batches")
    .set({ completed_at: now })
    .where("batch_id", "=", batchId)
    .where("completed_at", "is", null)
    .where((eb) => eb("job_count", "<=", eb.selectFrom("batch_terminal_jobs").select(sql<number>`count(*)::int`.as("n")).where("batch_id", "=", batchId)))
    .returningAll()
    .executeTakeFirst();
  if (!row) return undefined;
  const outcomes = await trx
    .selectFrom("batch_terminal_jobs")
    .select(["outcome", sql<number>`count(*)::int`.as("count")])
    .where("batch_id", "=", batchId)
    .groupBy("outcome")
    .execute();
  const counts: BatchCounts = { completed: 0, failed: 0, cancelled: 0 };
  for (const outcome of outcomes) counts[outcome.outcome] = outcome.count;
  const completed: CompletedBatch = { batchId, orgId: row.org_id, jobCount: row.job_count, counts, createdAt: row.created_at, completedAt: now };
  const event: webhooks.BatchCompleted = {
    batchId,
    orgId: row.org_id,
    jobCount: row.job_count,
    completed: counts.completed,
    failed: counts.failed,
    cancelled: counts.cancelled,
    createdAt: row.created_at,
    completedAt: now,
  };
  await enqueueOutbox(trx, [
    {
      messageId: `batch-completed:${batchId}`,
      subject: "webhooks.events.batch.completed",
      body: event,
      headers: { "Rb-Event-Type": "batch.completed", "Rb-Org-Id": row.org_id },
    },
  ], now);
  return completed;
}


