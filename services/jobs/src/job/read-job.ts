import type { Kysely } from "kysely";
import { notFound } from "@renderbus/errors";
import type { jobs } from "@renderbus/contracts";
import type { JobsDatabase } from "../db/jobs-database.js";
import { jobMessage, jobStateOfRow } from "./job-view.js";

/** Delivery metadata of some jobs, grouped by job id (oldest first). */
export async function deliveriesOf(db: Kysely<JobsDatabase>, jobIds: string[]) {
  if (jobIds.length === 0) return new Map<string, never[]>();
  const rows = await db.selectFrom("webhook_deliveries").selectAll().where("job_id", "in", jobIds).orderBy("id").execute();
  const byJob = new Map<string, typeof rows>();
  for (const row of rows) byJob.set(row.job_id, [...(byJob.get(row.job_id) ?? []), row]);
  return byJob;
}

/**
 * GetJob: the job with its webhook deliveries. `orgId` undefined reads any org's job (internal callers).
 * @throws AppError NOT_FOUND for an unknown job or another org's.
 */
export async function readJob(db: Kysely<JobsDatabase>, jobId: string, orgId: string | undefined): Promise<jobs.Job> {
  let query = db.selectFrom("job_views").selectAll().where("id", "=", jobId);
  if (orgId !== undefined) query = query.where("org_id", "=", orgId);
  const row = await query.executeTakeFirst();
  if (!row) throw notFound("Job");
  const deliveries = await deliveriesOf(db, [jobId]);
  return jobMessage(jobStateOfRow(row), deliveries.get(jobId) ?? []);
}
