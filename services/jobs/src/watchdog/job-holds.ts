import { sql, type Kysely, type RawBuilder } from "kysely";
import { conflict, notFound } from "@renderbus/errors";
import type { JobStatus } from "@renderbus/job-types";
import type { JobsDatabase } from "../db/jobs-database.js";
import { isTerminal } from "../job/job.js";

/** How far a worker's holds (HoldJob) move a job's watchdog deadline. */
export interface HoldLimits {
  /** A hold keeps the job for this long after it (JOB_HOLD_TTL_MS). */
  ttlMs: number;
  /** ...but never more than this past the deadline the job has without holds (JOB_HOLD_MAX_MS). */
  maxMs: number;
}

/**
 * A stored hold is rewritten only once it is older than this share of the TTL: a worker asks about each job in hand
 * every second (the same call is its cancel check), and a row update per job per second would cost a write each.
 */
const REWRITE_AFTER_TTL_SHARE = 1 / 6;

/**
 * Records that a worker still holds the job (HoldJob): preparing it before StartJob, running it, or finishing it after
 * its run time. Only the watchdog reads it; the job's events and status do not change. One statement: the job's
 * status is read and the hold upserted together, and the hold is written only when the stored one is older than a
 * sixth of the TTL (it keeps the job at least five sixths of the TTL after any call).
 * @throws AppError NOT_FOUND (no such job), CONFLICT (the job has ended: a worker holding it must stop its work).
 */
export async function holdJob(db: Kysely<JobsDatabase>, jobId: string, { ttlMs }: Pick<HoldLimits, "ttlMs">, now = Date.now()): Promise<void> {
  const fresh = now - Math.floor(ttlMs * REWRITE_AFTER_TTL_SHARE);
  const { rows } = await sql<{ status: JobStatus }>`
    with job as (select id, status from job_views where id = ${jobId}),
    held as (
      insert into job_holds (job_id, held_at)
      select id, ${now}::bigint from job
      where status in ('dispatched', 'running')
        and not exists (select 1 from job_holds h where h.job_id = job.id and h.held_at >= ${fresh}::bigint)
      on conflict (job_id) do update set held_at = greatest(job_holds.held_at, excluded.held_at)
    )
    select status from job`.execute(db);
  const status = rows[0]?.status;
  if (status === undefined) throw notFound("Job");
  if (isTerminal(status)) throw conflict(`Job is ${status}`);
}

/**
 * Whether a hold at `heldAt` (null: none) still keeps a job whose deadline without holds is `deadline`, at `now`: the
 * hold is younger than the TTL, and `deadline` is not more than the cap behind. The watchdog's two timeouts ask this
 * in SQL, each about its own deadline.
 */
export function keptByHold(heldAt: RawBuilder<number | null>, deadline: RawBuilder<number>, now: number, { ttlMs, maxMs }: HoldLimits): RawBuilder<boolean> {
  return sql<boolean>`coalesce(${heldAt} + ${ttlMs}::bigint >= ${now}::bigint and ${deadline} + ${maxMs}::bigint >= ${now}::bigint, false)`;
}

/** Forgets the holds of jobs that have ended (each pass of the watchdog). */
export async function forgetEndedHolds(db: Kysely<JobsDatabase>): Promise<void> {
  await sql`delete from job_holds h using job_views j where j.id = h.job_id and j.status not in ('dispatched', 'running')`.execute(db);
}
