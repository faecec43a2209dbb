import type { Kysely } from "kysely";
import type { Logger } from "@renderbus/telemetry";
import type { JobsDatabase } from "../db/jobs-database.js";
import { dispatchWaitingJobs, orgsWithWaitingJobs } from "./dispatch-waiting-jobs.js";

/** Dispatches waiting jobs when a slot may have opened. */
export interface Scheduler {
  /** Asks for a pass over the org (after a job was queued or reached a terminal state); passes coalesce per org. */
  requestPass(orgId: string): void;
  /** Resolves once no pass is running or requested (tests, shutdown). */
  idle(): Promise<void>;
  stop(): Promise<void>;
}

export interface SchedulerOptions {
  db: Kysely<JobsDatabase>;
  logger: Logger;
  /** Interval of the safety-net sweep over every org with waiting jobs. */
  sweepIntervalMs: number;
}

/**
 * Per-org scheduling with coalescing: while a pass for an org runs, further requests only mark it to run once more,
 * so a burst of submissions costs a few passes, not one each. A failed pass is retried after a second; the periodic
 * sweep covers whatever a crashed replica left behind (committed jobs whose pass never ran).
 */
export function startScheduler({ db, logger, sweepIntervalMs }: SchedulerOptions): Scheduler {
  const running = new Map<string, { again: boolean; done: Promise<void> }>();
  let stopped = false;

  const runPasses = async (orgId: string, entry: { again: boolean }) => {
    do {
      entry.again = false;
      try {
        const dispatched = await dispatchWaitingJobs(db, orgId);
        if (dispatched > 0) logger.debug({ orgId, dispatched }, "dispatched waiting jobs");
      } catch (error) {
        logger.warn({ err: error, orgId }, "scheduling pass failed; retrying");
        await new Promise((resolve) => setTimeout(resolve, 1000));
        entry.again = !stopped;
      }
    } while (entry.again && !stopped);
  };

  const requestPass = (orgId: string) => {
    if (stopped) return;
    const current = running.get(orgId);
    if (current) {
      current.again = true;
      return;
    }
    const entry = { again: false, done: Promise.resolve() };
    entry.done = runPasses(orgId, entry).finally(() => running.delete(orgId));
    running.set(orgId, entry);
  };

  const sweep = async () => {
    try {
      for (const orgId of await orgsWithWaitingJobs(db)) requestPass(orgId);
    } catch (error) {
      logger.warn({ err: error }, "scheduler sweep failed");
    }
  };
  const timer = setInterval(() => void sweep(), sweepIntervalMs);
  timer.unref();
  void sweep();

  const idle = async () => {
    while (running.size > 0) await Promise.all([...running.values()].map((entry) => entry.done));
  };

  return {
    requestPass,
    idle,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await idle();
    },
  };
}
