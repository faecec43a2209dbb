import { sql } from "kysely";
import { AppError } from "@renderbus/errors";
import type { JobsDeps } from "../deps.js";
import { failJob } from "../job/job-commands.js";
import type { DispatchQueue } from "./dispatch-queue.js";
import { dispatchesPastTimeout } from "./dispatched-timeout.js";
import { forgetEndedHolds, keptByHold, type HoldLimits } from "./job-holds.js";
import { resendLostDispatches, type ResendLostDispatchesOptions } from "./resend-lost-dispatches.js";

export interface JobTimeoutWatchdog {
  /** One pass (tests call it directly). Returns how many jobs it failed. */
  tick(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * The error of a job no worker started within `dispatchedTimeoutMs` of its work message leaving the queue (handed to a
 * worker, or gone from the stream). Time spent queued, waiting for a free worker, does not count.
 */
export function notStartedMessage(dispatchedTimeoutMs: number): string {
  return `No worker started the job within ${Math.round(dispatchedTimeoutMs / 1000)} s of its dispatch leaving the queue (the dispatch was dropped or failed on every delivery)`;
}

export interface JobTimeoutWatchdogOptions {
  intervalMs: number;
  /** Extra time past the plan's run time before a running job is failed. */
  graceMs: number;
  /**
   * How long a `dispatched` job (sent to the workers, not started) may go unstarted once its work message has left
   * the queue: delivered (a worker holds it before starting the job, it waits for a redelivery, or it ran out of
   * deliveries) or gone from the stream, counted from the first pass that saw it so. Past it the job fails with
   * PROVIDER_ERROR: a dispatch that was dropped (malformed, termed) or ran out of deliveries (`max_deliver`) would
   * otherwise hold its org's concurrency slot forever. It is failed, not dispatched again: a dispatch that failed
   * every delivery would most likely fail again, and a failure is visible to the user where a retry loop is not.
   * A message still queued (never delivered: every worker is busy) is never timed, however long it waits; one queued
   * a day ages out of the stream (its max age), and is then timed as gone.
   */
  dispatchedTimeoutMs: number;
  /** Tells a queued work message from one that was delivered or is gone. */
  dispatchQueue: DispatchQueue;
  /** Before that, a dispatch that left the stream without a start is sent again (resend-lost-dispatches.ts). */
  resend?: Omit<ResendLostDispatchesOptions, "dispatchHeld">;
  /** How long a worker's HoldJob keeps a job from both timeouts (job-holds.ts). */
  holds: HoldLimits;
}

/**
 * Safety net behind the workers, so no job stays unfinished forever (SECURITY-AUDIT finding 16): a job still running
 * `graceMs` after its plan's max run time (a worker that died mid-job) fails with PROVIDER_TIMEOUT, and a job still
 * dispatched `dispatchedTimeoutMs` after its work message left the queue (dispatched-timeout.ts) fails with
 * PROVIDER_ERROR. Both free the job's concurrency slot.
 */
export function startJobTimeoutWatchdog(deps: JobsDeps, { intervalMs, graceMs, dispatchedTimeoutMs, dispatchQueue, resend, holds }: JobTimeoutWatchdogOptions): JobTimeoutWatchdog {
  let current: Promise<number> = Promise.resolve(0);
  const failUnlessEnded = async (jobId: string, error: { code: string; message: string }): Promise<number> => {
    try {
      await failJob(deps, { jobId, error });
      return 1;
    } catch (failure) {
      // Finished, started or cancelled meanwhile: nothing to do.
      if (failure instanceof AppError && failure.code === "CONFLICT") return 0;
      throw failure;
    }
  };
  const tick = async (): Promise<number> => {
    const now = Date.now();
    await forgetEndedHolds(deps.db);
    const runDeadline = sql<number>`j.started_at + (j.limits->>'maxRunSeconds')::bigint * 1000 + ${graceMs}::bigint`;
    const overdue = await deps.db
      .selectFrom("job_views as j")
      .leftJoin("job_holds as h", "h.job_id", "j.id")
      .select(["j.id", "j.limits"])
      .where("j.status", "=", "running")
      .where(sql<boolean>`${runDeadline} < ${now}`)
      // A worker still storing a large output holds the job (job-holds.ts).
      .where(sql<boolean>`not ${keptByHold(sql.ref("h.held_at"), runDeadline, now, holds)}`)
      .limit(100)
      .execute();
    let failed = 0;
    for (const job of overdue) {
      failed += await failUnlessEnded(job.id, { code: "PROVIDER_TIMEOUT", message: `The job exceeded the plan's run time limit of ${job.limits.maxRunSeconds} s` });
    }
    // Both steps ask for the same jobs' work messages: each is read from the stream once per pass.
    const queue = readOncePerPass(dispatchQueue);
    if (resend) {
      const resent = await resendLostDispatches(deps.db, deps.logger, { ...resend, dispatchHeld: async (type, jobId) => (await queue.messageSequence(type, jobId)) !== null }, now);
      // A resend's message is on its way to the stream: the timeout reads it again.
      for (const jobId of resent) queue.forget(jobId);
    }
    for (const jobId of await dispatchesPastTimeout(deps.db, queue, dispatchedTimeoutMs, now, holds)) {
      deps.logger.warn({ jobId, dispatchedTimeoutMs }, "job's dispatch left the queue but no worker started it; failing it");
      failed += await failUnlessEnded(jobId, { code: "PROVIDER_ERROR", message: notStartedMessage(dispatchedTimeoutMs) });
    }
    return failed;
  };
  const timer = setInterval(() => {
    current = tick().catch((error: unknown) => {
      deps.logger.warn({ err: error }, "job timeout watchdog pass failed");
      return 0;
    });
  }, intervalMs);
  timer.unref();
  return {
    tick,
    stop: async () => {
      clearInterval(timer);
      await current;
    },
  };
}

/** A dispatch queue whose answers are kept for one pass, with a way to drop one that the pass has changed. */
function readOncePerPass(queue: DispatchQueue): DispatchQueue & { forget(jobId: string): void } {
  const sequences = new Map<string, Promise<number | null>>();
  return {
    deliveredThrough: () => queue.deliveredThrough(),
    messageSequence: (jobType, jobId) => {
      let sequence = sequences.get(jobId);
      if (sequence === undefined) {
        sequence = queue.messageSequence(jobType, jobId);
        sequences.set(jobId, sequence);
      }
      return sequence;
    },
    forget: (jobId) => sequences.delete(jobId),
  };
}
