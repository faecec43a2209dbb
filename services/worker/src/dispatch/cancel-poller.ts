import type { jobs } from "@renderbus/contracts";
import { AppError } from "@renderbus/errors";
import type { PromiseClient } from "@renderbus/rpc";
import type { Logger } from "@renderbus/telemetry";
import type { RunningJobs } from "./running-jobs.js";

/** How often each started job's status is asked for: a cancel stops its provider within this plus the kill. */
export const CANCEL_POLL_INTERVAL_MS = 1000;

type JobsClient = PromiseClient<jobs.JobsClient>;

export interface CancelPollerOptions {
  running: RunningJobs;
  jobs: JobsClient;
  workerId: string;
  logger: Logger;
  intervalMs?: number;
}

export interface CancelPoller {
  /**
   * The jobs client the job runner uses, watched: a job is polled from its successful StartJob until CompleteJob or
   * FailJob is called for it (or it leaves the running registry).
   */
  readonly jobs: JobsClient;
  stop(): void;
}

/**
 * Cancellation that does not depend on one core NATS message (SECURITY-AUDIT finding 14): `jobs.events.job.cancelled`
 * is at-most-once, so a worker that was reconnecting when it went out would run the provider to its end. Every
 * `intervalMs` this asks the jobs service about each job this process has started, by repeating its StartJob: that
 * call is idempotent for a running job (no event, no write) and answers CONFLICT once the job is cancelled or ended
 * otherwise (a watchdog failed it), which is exactly when its provider must stop. StartJob rather than GetJob because
 * GetJob answers tenants only (libs/rpc callers.ts). Jobs not started yet are never polled: StartJob would start them.
 */
export function startCancelPoller({ running, jobs, workerId, logger, intervalMs = CANCEL_POLL_INTERVAL_MS }: CancelPollerOptions): CancelPoller {
  const started = new Set<string>();
  const inFlight = new Set<string>();

  const watched = new Proxy(jobs, {
    get(target, property, receiver) {
      const value = Reflect.get(target, property, receiver) as unknown;
      if (property === "startJob") {
        return async (request: jobs.StartJobRequest, options?: Parameters<JobsClient["startJob"]>[1]) => {
          const response = await target.startJob(request, options);
          started.add(request.jobId);
          return response;
        };
      }
      if (property === "completeJob" || property === "failJob") {
        // From the moment the job's end is reported, a CONFLICT is no cancel: stop asking.
        return (request: { jobId: string }, options?: Parameters<JobsClient["failJob"]>[1]) => {
          started.delete(request.jobId);
          return (target[property] as (request: unknown, options: unknown) => Promise<unknown>)(request, options);
        };
      }
      return value;
    },
  });

  const pollOne = async (jobId: string): Promise<void> => {
    inFlight.add(jobId);
    try {
      await jobs.startJob({ jobId, workerId }, { deadlineMs: intervalMs * 2 });
    } catch (error) {
      if (!started.has(jobId)) return;
      if (error instanceof AppError && (error.code === "CONFLICT" || error.code === "NOT_FOUND")) {
        started.delete(jobId);
        if (running.cancel(jobId)) logger.info({ jobId }, "job no longer runnable (cancelled or ended); stopping provider");
        return;
      }
      // The jobs service unreachable: ask again on the next pass.
      logger.debug({ err: error, jobId }, "job status poll failed");
    } finally {
      inFlight.delete(jobId);
    }
  };

  const timer = setInterval(() => {
    const here = new Set(running.entries().map(([jobId]) => jobId));
    for (const jobId of started) {
      if (!here.has(jobId)) {
        started.delete(jobId);
        continue;
      }
      if (!inFlight.has(jobId)) void pollOne(jobId);
    }
  }, intervalMs);
  timer.unref();

  return {
    jobs: watched,
    stop() {
      clearInterval(timer);
      started.clear();
    },
  };
}
