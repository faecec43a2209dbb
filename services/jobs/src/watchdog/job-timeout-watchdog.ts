import { sql } from "kysely";
import { AppError } from "@renderbus/errors";
import type { JobsDeps } from "../deps.js";
import { failJob } from "../job/job-commands.js";

export interface JobTimeoutWatchdog {
  /** One pass (tests call it directly). Returns how many jobs it failed. */
  tick(): Promise<number>;
  stop(): Promise<void>;
}

/**
 * Safety net behind the worker's own run-time limit: a job still running `graceMs` after its plan's max run time
 * (a worker that died mid-job) fails with PROVIDER_TIMEOUT, which frees its concurrency slot.
 */
export function startJobTimeoutWatchdog(deps: JobsDeps, { intervalMs, graceMs }: { intervalMs: number; graceMs: number }): JobTimeoutWatchdog {
  let current: Promise<number> = Promise.resolve(0);
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
      try {
        await failJob(deps, {
          jobId: job.id,
          error: { code: "PROVIDER_TIMEOUT", message: `The job exceeded the plan's run time limit of ${job.limits.maxRunSeconds} s` },
        });
        failed += 1;
      } catch (error) {
        // Finished or cancelled meanwhile: nothing to do.
        if (!(error instanceof AppError && error.code === "CONFLICT")) throw error;
      }
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
