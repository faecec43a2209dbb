import type { Kysely } from "kysely";
import { validationError } from "@renderbus/errors";
import type { jobs } from "@renderbus/contracts";
import type { JobsDatabase } from "../db/jobs-database.js";
import { isJobStatus } from "../job/job.js";
import { jobMessage, jobStateOfRow } from "../job/job-view.js";
import { deliveriesOf } from "../job/read-job.js";

export const DEFAULT_PAGE_SIZE = 50;
export const MAX_PAGE_SIZE = 100;

interface CursorPosition {
  createdAt: number;
  id: string;
}

/** The cursor is opaque to clients: the (created_at, id) of the last job of the page, base64url JSON. */
export function encodeCursor(position: CursorPosition): string {
  return Buffer.from(JSON.stringify([position.createdAt, position.id])).toString("base64url");
}

export function decodeCursor(cursor: string): CursorPosition {
  try {
    const [createdAt, id] = JSON.parse(Buffer.from(cursor, "base64url").toString("utf8")) as unknown[];
    if (typeof createdAt === "number" && Number.isFinite(createdAt) && typeof id === "string") return { createdAt, id };
  } catch {
    // fall through to the validation error
  }
  throw validationError("cursor: is invalid");
}

/**
 * ListJobs: the org's jobs newest first, with keyset pagination on (created_at, id) descending. A walk is stable
 * while jobs are added: new jobs sort before the cursor, so pages never repeat or skip a job that existed when the
 * walk began.
 * @throws AppError VALIDATION_ERROR for a bad limit, status, time range or cursor.
 */
export async function listJobs(db: Kysely<JobsDatabase>, orgId: string, request: jobs.ListJobsRequest): Promise<jobs.ListJobsResponse> {
  const limit = request.limit === 0 || request.limit === undefined ? DEFAULT_PAGE_SIZE : request.limit;
  if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) throw validationError(`limit: must be between 1 and ${MAX_PAGE_SIZE}`);
  if (request.status !== undefined && !isJobStatus(request.status)) {
    throw validationError("status: must be one of waiting, dispatched, running, completed, failed, cancelled");
  }
  let query = db.selectFrom("job_views").selectAll().where("org_id", "=", orgId);
  if (request.status !== undefined) query = query.where("status", "=", request.status);
  if (request.type !== undefined) query = query.where("type", "=", request.type);
  if (request.batchId !== undefined) query = query.where("batch_id", "=", request.batchId);
  if (request.createdAfter !== undefined) query = query.where("created_at", ">", request.createdAfter);
  if (request.createdBefore !== undefined) query = query.where("created_at", "<", request.createdBefore);
  if (request.cursor) {
    const position = decodeCursor(request.cursor);
    query = query.where((eb) =>
      eb.or([eb("created_at", "<", position.createdAt), eb.and([eb("created_at", "=", position.createdAt), eb("id", "<", position.id)])]),
    );
  }
  const rows = await query.orderBy("created_at", "desc").orderBy("id", "desc").limit(limit + 1).execute();
  const page = rows.slice(0, limit);
  const deliveries = await deliveriesOf(db, page.map((row) => row.id));
  const last = page.at(-1);
  return {
    jobs: page.map((row) => jobMessage(jobStateOfRow(row), deliveries.get(row.id) ?? [])),
    nextCursor: rows.length > limit && last ? encodeCursor({ createdAt: last.created_at, id: last.id }) : undefined,
  };
}
