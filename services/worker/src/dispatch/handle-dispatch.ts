import type { jobEvents } from "@renderbus/contracts";
import { AppError } from "@renderbus/errors";
import type { Logger } from "@renderbus/telemetry";
import type { WorkerMetrics } from "../metrics.js";
import { processDispatch, type JobRunnerDeps } from "../run-job/process-dispatch.js";
import type { ConsumeDispatchesOptions } from "./consume-dispatches.js";
import { MAX_CRASHES, type CrashLedger } from "./crash-ledger.js";
import type { RunningJobs } from "./running-jobs.js";
import { crashIfAsked } from "./test-crash-hook.js";

/** Deliveries of one dispatch after which a job whose processing keeps throwing is failed instead of retried. */
export const MAX_ATTEMPTS = 5;

/** The failure reported for a job that took its worker process down with it. */
export const CRASHED_ONCE_MESSAGE = "processing this job crashed the worker";
export const CRASHED_TWICE_MESSAGE = "processing this job crashed the worker twice";

/** An id from a message that failed validation, fit for a log line: a short string, or nothing. */
const idOf = (value: unknown): string | undefined => (typeof value === "string" ? value.slice(0, 100) : undefined);

export interface DispatchHandlerDeps {
  logger: Logger;
  runner: JobRunnerDeps;
  running: RunningJobs;
  crashes: CrashLedger;
  metrics?: WorkerMetrics;
  /** Reports the job failed with PROVIDER_ERROR (a job that already ended is left as it is). */
  failJob(jobId: string, message: string): Promise<unknown>;
  /** WORKER_TEST_CRASH_HOOK outside production: an input URL with `?rb-test-crash=` crashes the process. */
  crashHook: boolean;
  onProviderSpawn?: (jobId: string, pid: number) => void;
  /** The process is exiting after a fatal error: from then on nothing settles a message but the fatal handler. */
  dying(): boolean;
  /** The worker is stopping: a job stopped by it goes back to the queue at once. */
  shuttingDown(): boolean;
}

/**
 * What the worker does with one delivery of a dispatch: drops malformed ones, fails a job that crashed workers
 * twice (poison), runs the job with its crash marker set, and decides what the message becomes: acked, handed back
 * at once (shutdown), retried (a thrown error), or failed after MAX_ATTEMPTS deliveries.
 */
export function dispatchHandler(deps: DispatchHandlerDeps): ConsumeDispatchesOptions["handle"] {
  const { logger, running, crashes, metrics } = deps;
  const never = () => new Promise<never>(() => undefined);
  return async (dispatch: jobEvents.JobDispatch, delivery) => {
    const { deliveryCount } = delivery;
    if (!dispatch?.jobId || !dispatch.orgId) {
      // Ids only: the message's inputs are URLs that may carry presigned credentials (SECURITY-AUDIT finding 23).
      logger.error({ jobId: idOf(dispatch?.jobId), orgId: idOf(dispatch?.orgId), deliveryCount }, "malformed dispatch message dropped");
      // Ended for good: no delivery of it would ever be better formed.
      return { term: "malformed dispatch" };
    }
    const { jobId } = dispatch;
    // Deliveries that ended with their process (not naks: those clear their marker) make this a poison message.
    const crashed = await crashes.begin(jobId, deliveryCount);
    if (crashed >= MAX_CRASHES) {
      logger.error({ jobId, crashes: crashed, deliveryCount }, "processing this job crashed the worker twice; failing it");
      await deps.failJob(jobId, CRASHED_TWICE_MESSAGE);
      metrics?.dispatches.inc({ outcome: "dead_lettered" });
      // The marker stays (a day): a redelivery despite the term ends here again instead of running the job.
      return { term: CRASHED_TWICE_MESSAGE };
    }
    if (crashed > 0) logger.warn({ jobId, crashes: crashed, deliveryCount }, "job comes back after crashing a worker; running it again");
    const signal = running.start(jobId, delivery);
    let settled = false;
    try {
      const outcome = await running.run(jobId, () =>
        (deps.crashHook ? crashIfAsked(dispatch) : undefined) ??
        processDispatch(dispatch, deps.runner, signal, {
          onSpawn: (pid) => deps.onProviderSpawn?.(jobId, pid),
        }),
      );
      if (deps.dying()) return await never();
      settled = true;
      // A shutdown stops jobs through the same signal: give the job back to the queue at once.
      if (outcome === "cancelled" && deps.shuttingDown()) {
        metrics?.dispatches.inc({ outcome: "retried" });
        return { retryAfterMs: 0 };
      }
      metrics?.dispatches.inc({ outcome });
      return;
    } catch (error) {
      if (deps.dying()) return await never();
      settled = true;
      metrics?.dispatches.inc({ outcome: "error" });
      if (deliveryCount >= MAX_ATTEMPTS && !(error instanceof AppError && error.code === "SERVICE_UNAVAILABLE")) {
        logger.error({ err: error, jobId }, "job failed repeatedly; reporting it failed");
        await deps.failJob(jobId, "the worker could not run the job");
        return;
      }
      throw error;
    } finally {
      running.finish(jobId);
      // The process lived through this delivery, whatever its outcome: it is no crash.
      if (settled) await crashes.end(jobId);
    }
  };
}
