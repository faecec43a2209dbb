import { sql, type Kysely } from "kysely";
import { enqueueOutbox } from "@renderbus/db";
import type { Logger } from "@renderbus/telemetry";
import type { JobsDatabase } from "../db/jobs-database.js";
import { dispatchWorkMessage } from "../job/job-messages.js";
import { loadJob } from "../job/job-store.js";

export interface ResendLostDispatchesOptions {
  /** A job `dispatched` this long (and this long after its previous resend) is checked. */
  afterMs: number;
  /** Resends per job at most; then the dispatched timeout fails it. 0 turns resending off. */
  max: number;
  /**
   * Whether the dispatch stream still holds the job's work message. While it does, JetStream hands it out again
   * itself (ack wait, naks), or a worker holds it (downloading inputs before it starts the job): no resend.
   */
  dispatchHeld: (jobType: string, jobId: string) => Promise<boolean>;
}

/**
 * Sends the work message again for jobs that stayed `dispatched` while their message left the dispatch stream without
 * any worker starting them: acked or terminated without a start, or lost in a NATS cluster fault. Without this they
 * would hold their org's slot until the dispatched timeout fails them. Each resend is recorded (`dispatch_resends`,
 * under a conditional upsert so one replica sends it) and carries a new message id (`<dispatch event id>:resend:<n>`),
 * which JetStream's duplicate window would otherwise drop. A worker holding a dispatch keeps it in the stream (acked
 * only when the job ends), so a resend follows only a message that is gone; should a fault remove one under a worker
 * still running it, the job runs twice as after a redelivery: the first report wins, the other gets a conflict. The
 * worker's crash ledger counts a poison job's crashes by job id, resends included.
 * Returns the ids of the jobs whose dispatch was sent again.
 */
export async function resendLostDispatches(db: Kysely<JobsDatabase>, logger: Logger, options: ResendLostDispatchesOptions, now = Date.now()): Promise<string[]> {
  if (options.max <= 0) return [];
  const before = now - options.afterMs;
  const candidates = await db
    .selectFrom("job_views as j")
    .leftJoin("dispatch_resends as r", "r.job_id", "j.id")
    .select(["j.id", "j.type"])
    .where("j.status", "=", "dispatched")
    .where("j.dispatched_at", "<", before)
    .where((eb) => eb.or([eb("r.job_id", "is", null), eb.and([eb("r.resends", "<", options.max), eb("r.last_at", "<", before)])]))
    .orderBy("j.dispatched_at")
    .limit(100)
    .execute();
  const resent: string[] = [];
  for (const candidate of candidates) {
    if (await options.dispatchHeld(candidate.type, candidate.id)) continue;
    const sent = await db.transaction().execute(async (trx) => {
      const loaded = await loadJob(trx, candidate.id, { lock: true });
      if (loaded.state?.status !== "dispatched") return undefined;
      // One replica wins: a concurrent pass waits on the row and then fails the condition.
      const recorded = await sql<{ resends: number }>`
        insert into dispatch_resends (job_id, resends, last_at) values (${candidate.id}, 1, ${now})
        on conflict (job_id) do update set resends = dispatch_resends.resends + 1, last_at = excluded.last_at
        where dispatch_resends.resends < ${options.max} and dispatch_resends.last_at < ${before}
        returning resends`.execute(trx);
      const resends = recorded.rows[0]?.resends;
      if (resends === undefined) return undefined;
      const dispatched = await trx.selectFrom("events").select("event_id").where("stream_id", "=", candidate.id).where("type", "=", "JobDispatched").executeTakeFirstOrThrow();
      await enqueueOutbox(trx, [dispatchWorkMessage(loaded.state, `${dispatched.event_id}:resend:${resends}`, { "Rb-Dispatch-Resend": String(resends) })], now);
      return resends;
    });
    if (sent === undefined) continue;
    logger.warn({ jobId: candidate.id, resend: sent, max: options.max }, "job dispatched but its work message is gone and no worker started it; dispatch sent again");
    resent.push(candidate.id);
  }
  return resent;
}
