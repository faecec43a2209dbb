import type { jobs } from "@renderbus/contracts";
import { AppError } from "@renderbus/errors";
import type { PromiseClient } from "@renderbus/rpc";
import type { Logger } from "@renderbus/telemetry";
import type { RunningJobs } from "./running-jobs.js";

/** How often each job in hand is held: a cancel stops its work within this plus the kill. */
export const HOLD_INTERVAL_MS = 1000;

export interface JobHolderOptions {
  running: RunningJobs;
  jobs: PromiseClient<jobs.JobsClient>;
  workerId: string;
  logger: Logger;
  intervalMs?: number;
}

/**
 * Every `intervalMs`, tells the jobs service which jobs this process holds (HoldJob), from the moment it takes a work
 * message until it settles it. One call does two things:
 * - it keeps the job from the jobs service's watchdog, which would otherwise fail a job whose inputs take longer to
 *   download than DISPATCHED_TIMEOUT_MS before StartJob, or whose output takes longer to store than the grace after its
 *   run time (services/jobs src/watchdog/job-holds.ts; the service writes the hold at most once a sixth of its TTL);
 * - its answer is the cancel that does not depend on one core NATS message (SECURITY-AUDIT finding 14):
 *   `jobs.events.job.cancelled` is at-most-once, so a worker that was reconnecting when it went out would run the
 *   provider to its end. CONFLICT or NOT_FOUND means the job ended (cancelled, failed by the watchdog): its downloads
 *   and provider stop, whether it is being prepared or running. After the worker itself reported the end, the abort
 *   finds its work done and changes nothing.
 * Other errors (the jobs service unreachable) wait for the next pass.
 */
export function startJobHolder({ running, jobs, workerId, logger, intervalMs = HOLD_INTERVAL_MS }: JobHolderOptions): { stop(): void } {
  const inFlight = new Set<string>();
  const holdOne = async (jobId: string): Promise<void> => {
    inFlight.add(jobId);
    try {
      await jobs.holdJob({ jobId, workerId }, { deadlineMs: intervalMs * 2 });
    } catch (error) {
      if (error instanceof AppError && (error.code === "CONFLICT" || error.code === "NOT_FOUND")) {
        if (running.cancel(jobId)) logger.info({ jobId }, "job ended elsewhere (cancelled or failed); stopping its work");
        return;
      }
      logger.debug({ err: error, jobId }, "job hold failed");
    } finally {
      inFlight.delete(jobId);
    }
  };
  const timer = setInterval(() => {
    for (const [jobId] of running.entries()) if (!inFlight.has(jobId)) void holdOne(jobId);
  }, intervalMs);
  timer.unref();
  return { stop: () => clearInterval(timer) };
}
