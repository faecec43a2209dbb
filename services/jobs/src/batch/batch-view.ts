import type { Kysely, Selectable } from "kysely";
import { notFound } from "@renderbus/errors";
import type { jobs } from "@renderbus/contracts";
import type { BatchViewTable, JobsDatabase } from "../db/jobs-database.js";

/** The batch object (`GET /batches/{id}`): counts per status, running/completed, timing. */
export function batchMessage(row: Selectable<BatchViewTable>): jobs.Batch {
  return {
    id: row.id,
    orgId: row.org_id,
    jobCount: row.job_count,
    jobIds: row.job_ids,
    status: row.status,
    counts: {
      waiting: row.waiting,
      dispatched: row.dispatched,
      running: row.running,
      completed: row.completed,
      failed: row.failed,
      cancelled: row.cancelled,
    },
    createdAt: row.created_at,
    completedAt: row.completed_at ?? undefined,
  };
}

/**
 * GetBatch within the caller's org.
 * @throws AppError NOT_FOUND for an unknown batch or another org's.
 */
export async function getBatch(db: Kysely<JobsDatabase>, orgId: string, batchId: string): Promise<jobs.Batch> {
  const row = await db.selectFrom("batch_views").selectAll().where("id", "=", batchId).where("org_id", "=", orgId).executeTakeFirst();
  if (!row) throw notFound("Batch");
  return batchMessage(row);
}
