import { sql, type Transaction } from "kysely";
import type { JobsDatabase } from "../db/jobs-database.js";
import type { JobStatus } from "../job/job.js";

/**
 * Moves one job of a batch from one status column to another and marks the batch completed, once, when every job
 * is terminal. Runs in the job command's transaction, so counts never drift from the job projection.
 */
export async function projectBatchTransition(
  trx: Transaction<JobsDatabase>,
  batchId: string,
  from: JobStatus | undefined,
  to: JobStatus,
  now: number,
): Promise<void> {
  // Column names come from the closed JobStatus set, never from input.
  const decrement = from ? sql`, ${sql.ref(from)} = ${sql.ref(from)} - 1` : sql``;
  await sql`update batch_views set ${sql.ref(to)} = ${sql.ref(to)} + 1 ${decrement} where id = ${batchId}`.execute(trx);
  await sql`
    update batch_views set status = 'completed', completed_at = ${now}
    where id = ${batchId} and status <> 'completed' and completed + failed + cancelled = job_count`.execute(trx);
}
