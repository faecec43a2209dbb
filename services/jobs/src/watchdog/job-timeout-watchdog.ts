import { sql } from "kysely";
import { AppError } from "@renderbus/errors";
import type { JobsDeps } from "../deps.js";
import { failJob } from "../job/job-commands.js";
import { resendLostDispatches, type ResendLostDispatchesOptions } from "./resend-lost-dispatches.js";

export interface JobTimeoutWatchdog {
  /** One pass (tests call it directly). Returns how many jobs it failed. */
  tick(): Promise<number>;
  stop(): Promise<void>;
}

/** The error of a job no worker started within `dispatchedTimeoutMs` of its dispatch. */
export function notStartedMessage(dispatchedTimeoutMs: number): string {
  return `No worker started the job within ${Math.round(dispatchedTimeoutMs / 1000)} s of its dispatch (its dispatch was dropped or failed on every delivery)`;
}

export interface JobTimeoutWatchdogOptions {
  intervalMs: number;
  /** Extra time past the plan's run time before a running job is failed. */
  graceMs: number;
  /**
   * How long a job may stay `dispatched` (sent to the workers, not started). Past it the job fails with
   * PROVIDER_ERROR: a dispatch that was dropped (malformed, termed) or ran out of deliveries (`max_deliver`) would
   * otherwise hold its org's concurrency slot forever. It is failed, not dispatched again: a dispatch that failed
   * every delivery would most likely fail again, and a failure is visible to the user where a retry loop is not.
   */
  dispatchedTimeoutMs: number;
  /** Before that, a dispatch that left the stream without a start is sent again (resend-lost-dispatches.ts). */
  resend?: ResendLostDispatchesOptions;
}

/**
 * Safety net behind the workers, so no job stays unfinished forever (SECURITY-AUDIT finding 16): a job still running
 * `graceMs` after its plan's max run time (a worker that died mid-job) fails with PROVIDER_TIMEOUT, and a job still
 * dispatched `dispatchedTimeoutMs` after its dispatch fails with PROVIDER_ERROR. Both free the job's concurrency slot.
 */
export function startJobTimeoutWatchdog(deps: JobsDeps, { intervalMs, graceMs, dispatchedTimeoutMs, resend }: JobTimeoutWatchdogOptions): JobTimeoutWatchdog {
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
    const overdue = await deps.db
      .selectFrom("job_views")
      .select(["id", "limits"])
      .where("status", "=", "running")
      .where(sql<boolean>`started_at + (limits->>'maxRunSeconds')::bigint * 1000 + ${graceMs} < ${now}`)
      .limit(100)
      .execute();
    let failed = 0;
    for (const job of overdue) {
      failed += await failUnlessEnded(job.id, { code: "PROVIDER_TIMEOUT", message: `The job exceeded the plan's run time limit of ${job.limits.maxRunSeconds} s` });
    }
    if (resend) await resendLostDispatches(deps.db, deps.logger, resend, now);
    const neverStarted = await deps.db
      .selectFrom("job_views")
      .select(["id"])
      .where("status", "=", "dispatched")
      .where("dispatched_at", "<", now - dispatchedTimeoutMs)
      .limit(100)
      .execute();
    for (const job of neverStarted) {
      deps.logger.warn({ jobId: job.id, dispatchedTimeoutMs }, "job dispatched but never started; failing it");
      failed += await failUnlessEnded(job.id, { code: "PROVIDER_ERROR", message: notStartedMessage(dispatchedTimeoutMs) });
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
