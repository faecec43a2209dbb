import { sql, type Kysely, type Transaction } from "kysely";
import { notFound } from "@renderbus/errors";
import { appendToStream, ConcurrencyError, enqueueOutbox, readStream } from "@renderbus/db";
import type { JobsDatabase } from "../db/jobs-database.js";
import { projectBatchTransition } from "../batch/batch-projection.js";
import { decide } from "./decide.js";
import { evolve, foldJob } from "./evolve.js";
import { asJobEvents, jobOutboxMessages } from "./job-messages.js";
import { ACTIVE_STATUSES, type JobCommand, type JobEvent, type JobState } from "./job.js";

export type JobsTransaction = Transaction<JobsDatabase>;

/** A job as loaded inside a transaction: its state and the stream version to append after. */
export interface LoadedJob {
  state: JobState | undefined;
  version: number;
}

/**
 * Loads a job's stream. With `lock`, the job's projection row is locked first (`FOR UPDATE`), which serialises
 * every writer of one job (API, worker reports, scheduler) so optimistic conflicts stay rare.
 */
export async function loadJob(trx: JobsTransaction, jobId: string, { lock = false } = {}): Promise<LoadedJob> {
  if (lock) await trx.selectFrom("job_views").select("id").where("id", "=", jobId).forUpdate().execute();
  const stored = await readStream(trx, jobId);
  return { state: foldJob(asJobEvents(stored)), version: stored.at(-1)?.version ?? 0 };
}

/**
 * Appends decided events to the job's stream and, in the same transaction, updates the job and batch projections
 * and enqueues the outbox messages. Returns the job's new state.
 * @throws ConcurrencyError when another writer appended first.
 */
export async function commitJobEvents(trx: JobsTransaction, loaded: LoadedJob, events: JobEvent[], now: number): Promise<JobState | undefined> {
  if (events.length === 0) return loaded.state;
  const jobId = events[0]!.data.jobId;
  const stored = await appendToStream(trx, jobId, loaded.version, events, now);
  const after = events.reduce<JobState | undefined>(evolve, loaded.state)!;
  await projectJob(trx, after, stored.at(-1)!.version);
  if (after.batchId && loaded.state?.status !== after.status) {
    await projectBatchTransition(trx, after.batchId, loaded.state?.status, after.status, now);
  }
  await enqueueOutbox(trx, jobOutboxMessages(stored, after), now);
  return after;
}

async function projectJob(trx: JobsTransaction, job: JobState, version: number): Promise<void> {
  const { changing, ...created } = splitJobViewRow(job, version);
  await trx
    .insertInto("job_views")
    .values({ ...created, ...changing })
    .onConflict((conflict) => conflict.column("id").doUpdateSet(changing))
    .execute();
}

/** The whole projection row of a job at `version`. */
export const jobViewRowOf = (job: JobState, version: number) => {
  const { changing, ...created } = splitJobViewRow(job, version);
  return { ...created, ...changing };
};

/** The projection row of a job: the columns set at creation, and `changing`, those every later event may update. */
function splitJobViewRow(job: JobState, version: number) {
  const changing = {
    status: job.status,
    result: JSON.stringify(job.result ?? null),
    cost: JSON.stringify(job.cost ?? null),
    error: JSON.stringify(job.error ?? null),
    dispatched_at: job.dispatchedAt ?? null,
    started_at: job.startedAt ?? null,
    completed_at: job.completedAt ?? null,
    version,
  };
  return {
    changing,
    id: job.id,
    org_id: job.orgId,
    batch_id: job.batchId ?? null,
    type: job.type,
    inputs: JSON.stringify(job.inputs),
    params: JSON.stringify(job.params),
    metadata: JSON.stringify(job.metadata),
    plan: job.plan,
    limits: JSON.stringify(job.limits),
    submitted_by: job.submittedBy,
    created_at: job.createdAt,
  };
}

export interface JobCommandOutcome {
  before: JobState | undefined;
  after: JobState;
  events: JobEvent[];
}

/**
 * Runs one command against an existing job in its own transaction: lock, load, decide, commit. `orgId` scopes the
 * lookup to the caller's org (another org's job is NOT_FOUND); internal callers (worker reports) omit it.
 * Retries a few times on ConcurrencyError.
 * @throws AppError NOT_FOUND / CONFLICT from `decide`.
 */
export async function runJobCommand(
  db: Kysely<JobsDatabase>,
  jobId: string,
  makeCommand: (state: JobState) => JobCommand,
  { orgId }: { orgId?: string } = {},
): Promise<JobCommandOutcome> {
  for (let attempt = 1; ; attempt += 1) {
    try {
      return await db.transaction().execute(async (trx) => {
        const loaded = await loadJob(trx, jobId, { lock: true });
        const state = loaded.state && (orgId === undefined || loaded.state.orgId === orgId) ? loaded.state : undefined;
        if (!state) throw notFound("Job");
        const events = decide(state, makeCommand(state));
        const now = Date.now();
        const after = await commitJobEvents(trx, loaded, events, now);
        return { before: loaded.state, after: after!, events };
      });
    } catch (error) {
      if (error instanceof ConcurrencyError && attempt < 5) continue;
      throw error;
    }
  }
}

/** Counts of the org's jobs holding a concurrency slot. */
export async function countActiveJobs(trx: JobsTransaction, orgId: string): Promise<number> {
  const row = await trx
    .selectFrom("job_views")
    .select(sql<number>`count(*)::int`.as("count"))
    .where("org_id", "=", orgId)
    .where("status", "in", ACTIVE_STATUSES)
    .executeTakeFirst();
  return row?.count ?? 0;
}
