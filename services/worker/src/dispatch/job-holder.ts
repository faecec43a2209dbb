import type { jobs } from "@renderbus/contracts";
import { AppError } from "@renderbus/errors";
import type { PromiseClient } from "@renderbus/rpc";
import type { Logger } from "@renderbus/telemetry";
import type { RunningJobs } from "./running-jobs.js";

export interface JobHolderOptions {
  running: RunningJobs;
  jobs: PromiseClient<jobs.JobsClient>;
  workerId: string;
  logger: Logger;
  /** JOB_HOLD_INTERVAL_MS. */
  intervalMs: number;
}

/**
 * Tells the jobs service, every `intervalMs`, which jobs this process still holds (HoldJob), from the moment it takes a
 * work message until it settles it: its watchdog would otherwise fail a job whose inputs take longer to download than
 * DISPATCHED_TIMEOUT_MS before StartJob, or whose output takes longer to store than the grace after its run time
 * (services/jobs src/watchdog/job-holds.ts). A hold answered CONFLICT or NOT_FOUND means the job ended (cancelled
 * while its inputs downloaded, failed by the watchdog): its work stops, as for a cancel. Other errors wait for the
 * next interval; the watchdog's TTL is several intervals.
 */
export function startJobHolder({ running, jobs, workerId, logger, intervalMs }: JobHolderOptions): { stop(): void } {
  const inFlight = new Set<string>();
  const holdOne = async (jobId: string): Promise<void> => {
    inFlight.add(jobId);
    try {
      await jobs.holdJob({ jobId, workerId }, { deadlineMs: intervalMs });
    } catch (error) {
      if (error instanceof AppError && (error.code === "CONFLICT" || error.code === "NOT_FOUND")) {
        if (running.cancel(jobId)) logger.info({ jobId }, "job no longer held (cancelled or ended); stopping its work");
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
