import type { Kysely } from "kysely";
import { validationError } from "@renderbus/errors";
import type { jobs } from "@renderbus/contracts";
import type { JobsDatabase } from "../db/jobs-database.js";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE, decodeCursor, encodeCursor } from "../list-jobs/list-jobs.js";
import { batchMessage } from "./batch-view.js";

const BATCH_STATUSES = ["running", "completed"];

/**
 * ListBatches: the org's batches newest first, keyset paginated on (created_at, id) like ListJobs, so a walk neither
 * repeats nor skips a batch while new ones are submitted.
 * @throws AppError VALIDATION_ERROR for a bad limit, status or cursor.
 */
export async function listBatches(db: Kysely<JobsDatabase>, orgId: string, request: jobs.ListBatchesRequest): Promise<jobs.ListBatchesResponse> {
  const limit = request.limit === 0 || request.limit === undefined ? DEFAULT_PAGE_SIZE : request.limit;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) throw validationError(`limit: must be between 1 and ${MAX_PAGE_SIZE}`);
  if (request.status !== undefined && !BATCH_STATUSES.includes(request.status)) throw validationError("status: must be one of running, completed");
  let query = db.selectFrom("batch_views").selectAll().where("org_id", "=", orgId);
  if (request.status !== undefined) query = query.where("status", "=", request.status);
  if (request.cursor) {
    const position = decodeCursor(request.cursor);
    query = query.where((eb) =>
      eb.or([eb("created_at", "<", position.createdAt), eb.and([eb("created_at", "=", position.createdAt), eb("id", "<", position.id)])]),
    );
  }
  const rows = await query.orderBy("created_at", "desc").orderBy("id", "desc").limit(limit + 1).execute();
  const page = rows.slice(0, limit);
  const last = page.at(-1);
  return {
    batches: page.map(batchMessage),
    nextCursor: rows.length > limit && last ? encodeCursor({ createdAt: last.created_at, id: last.id }) : undefined,
  };
}
