import { sql, type Kysely } from "kysely";
import type { JobsDatabase } from "../db/jobs-database.js";
import type { DispatchQueue } from "./dispatch-queue.js";
import { keptByHold, type HoldLimits } from "./job-holds.js";

/**
 * Dispatched jobs looked at per pass, oldest dispatch first; each costs a direct read of the dispatch stream. The work
 * queue hands messages out in dispatch order, so the oldest dispatched jobs are those delivered (or next to be): a job
 * further back is looked at once the ones ahead of it leave `dispatched`, which can only make its timeout start later.
 */
const WATCHED_PER_PASS = 500;

/**
 * Which `dispatched` jobs the dispatched timeout ends now. A job whose work message is queued (in the stream, above
 * what the workers' durable has delivered) waits for a free worker, however long that takes: never ended (SPEC §2,
 * jobs are never rejected for concurrency). Any other job's message was delivered (a worker holds it before starting
 * the job, it waits for a redelivery, or it ran out of deliveries) or is gone (dropped, aged out of the stream): it is
 * ended once `timeoutMs` has passed since a pass first saw it so, which `unqueued_dispatches` records. A message found
 * queued again (the durable re-created, a resend not yet taken) loses that record; so does a job no longer dispatched.
 * A worker preparing the job (downloading large inputs) holds it (job-holds.ts): past the timeout, a recent hold still
 * keeps it, up to `holds.maxMs` past it. Returns the ids of the jobs to end.
 */
export async function dispatchesPastTimeout(db: Kysely<JobsDatabase>, queue: DispatchQueue, timeoutMs: number, now: number, holds: HoldLimits): Promise<string[]> {
  await sql`delete from unqueued_dispatches u using job_views j where j.id = u.job_id and j.status <> 'dispatched'`.execute(db);
  const dispatched = await db
    .selectFrom("job_views as j")
    .leftJoin("unqueued_dispatches as u", "u.job_id", "j.id")
    .leftJoin("job_holds as h", "h.job_id", "j.id")
    .select(["j.id", "j.type", "u.seen_at"])
    .select(keptByHold(sql.ref("h.held_at"), sql`u.seen_at + ${timeoutMs}::bigint`, now, holds).as("held"))
    .where("j.status", "=", "dispatched")
    .orderBy("j.dispatched_at")
    .orderBy("j.id")
    .limit(WATCHED_PER_PASS)
    .execute();
  if (dispatched.length === 0) return [];
  // Read once, before the messages: one delivered meanwhile counts as queued until the next pass, never the reverse.
  const deliveredThrough = await queue.deliveredThrough();
  const queuedAgain: string[] = [];
  const firstSeen: string[] = [];
  const pastTimeout: string[] = [];
  for (const job of dispatched) {
    const sequence = await queue.messageSequence(job.type, job.id);
    if (sequence !== null && sequence > deliveredThrough) {
      if (job.seen_at !== null) queuedAgain.push(job.id);
    } else if (job.seen_at === null) {
      firstSeen.push(job.id);
    } else if (job.seen_at < now - timeoutMs && !job.held) {
      pastTimeout.push(job.id);
    }
  }
  if (queuedAgain.length > 0) await db.deleteFrom("unqueued_dispatches").where("job_id", "in", queuedAgain).execute();
  if (firstSeen.length > 0) {
    // Another replica's pass may have recorded it first: the earlier sighting stays.
    await db
      .insertInto("unqueued_dispatches")
      .values(firstSeen.map((jobId) => ({ job_id: jobId, seen_at: now })))
      .onConflict((conflict) => conflict.column("job_id").doNothing())
      .execute();
  }
  return pastTimeout;
}
