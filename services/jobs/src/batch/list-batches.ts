import type { Kysely } from "kysely";
import { validationError } from "@renderbus/errors";
import type { jobs } from "@renderbus/contracts";
import type { JobsDatabase } from "../db/jobs-database.js";
import { keysetPage, pageSize } from "../pagination/keyset-page.js";
import { batchMessage } from "./batch-view.js";

const BATCH_STATUSES = ["running", "completed"];

/**
 * ListBatches: the org's batches newest first, keyset paginated on (created_at, id) like ListJobs (see keysetPage).
 * @throws AppError VALIDATION_ERROR for a bad limit, status or cursor.
 */
export async function listBatches(db: Kysely<JobsDatabase>, orgId: string, request: jobs.ListBatchesRequest): Promise<jobs.ListBatchesResponse> {
  const size = pageSize(request.limit);
  if (request.status !== undefined && !BATCH_STATUSES.includes(request.status)) throw validationError("status: must be one of running, completed");
  let query = db.selectFrom("batch_views").selectAll().where("org_id", "=", orgId);
  if (request.status !== undefined) query = query.where("status", "=", request.status);
  const { rows, nextCursor } = await keysetPage(query, size, request.cursor);
  return { batches: rows.map(batchMessage), nextCursor };
}
