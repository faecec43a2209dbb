import type { Kysely } from "kysely";
import { validationError } from "@renderbus/errors";
import type { jobs } from "@renderbus/contracts";
import type { JobsDatabase } from "../db/jobs-database.js";
import { isJobStatus } from "../job/job.js";
import { jobMessage, jobStateOfRow } from "../job/job-view.js";
import { deliveriesOf } from "../job/read-job.js";
import { keysetPage, pageSize } from "../pagination/keyset-page.js";

/**
 * ListJobs: the org's jobs newest first, keyset paginated on (created_at, id) (see keysetPage).
 * @throws AppError VALIDATION_ERROR for a bad limit, status, time range or cursor.
 */
export async function listJobs(db: Kysely<JobsDatabase>, orgId: string, request: jobs.ListJobsRequest): Promise<jobs.ListJobsResponse> {
  const size = pageSize(request.limit);
  if (request.status !== undefined && !isJobStatus(request.status)) {
    throw validationError("status: must be one of waiting, dispatched, running, completed, failed, cancelled");
  }
  let query = db.selectFrom("job_views").selectAll().where("org_id", "=", orgId);
  if (request.status !== undefined) query = query.where("status", "=", request.status);
  if (request.type !== undefined) query = query.where("type", "=", request.type);
  if (request.batchId !== undefined) query = query.where("batch_id", "=", request.batchId);
  if (request.createdAfter !== undefined) query = query.where("created_at", ">", request.createdAfter);
  if (request.createdBefore !== undefined) query = query.where("created_at", "<", request.createdBefore);
  const { rows, nextCursor } = await keysetPage(query, size, request.cursor);
  const deliveries = await deliveriesOf(db, rows.map((row) => row.id));
  return {
    jobs: rows.map((row) => jobMessage(jobStateOfRow(row), deliveries.get(row.id) ?? [])),
    nextCursor,
  };
}
