import type { Kysely } from "kysely";
import type { Plan, PlanName } from "@renderbus/plans";
import type { Logger } from "@renderbus/telemetry";
import type { JobsDatabase } from "../db/jobs-database.js";
import { dispatchWaitingJobs, orgsWithWaitingJobs } from "./dispatch-waiting-jobs.js";

/** Dispatches waiting jobs when a slot may have opened. */
export interface Scheduler {
  /**
   * Asks for a pass over the org; passes coalesce per org. `submitted`: a job was queued, which needs no pass while
   * the org's slots are known to be full; `slot-freed`: a job reached a terminal state; `sweep`: the safety net.
   */
  requestPass(orgId: string, reason?: PassReason): void;
  /** Passes run and submissions that needed none, since start (tests, diagnostics). */
  stats(): { passes: number; skipped: number };
  /** Resolves once no pass is running or requested (tests, shutdown). */
  idle(): Promise<void>;
  stop(): Promise<void>;
}

export type PassReason = "submitted" | "slot-freed" | "plan-changed" | "sweep";

export interface SchedulerOptions {
  db: Kysely<JobsDatabase>;
  logger: Logger;
  /** The plan table (PLANS_JSON applied): an org whose plan changed gets its current plan's concurrency. */
  plans?: Record<PlanName, Plan>;
  /** Interval of the safety-net sweep over every org with waiting jobs. */
  sweepIntervalMs: number;
  /**
   * After a pass finds every slot of an org taken, submissions skip their pass for this long. A slot freed on this
   * replica always runs a pass, and the replica that frees a slot runs its own, so this only bounds how long a slot
   * freed elsewhere could go unseen here if that replica's pass failed.
   */
  fullRecheckMs?: number;
}

/**
 * Per-org scheduling with coalescing: while a pass for an org runs, further requests only mark it to run once more,
 * so a burst of submissions costs a few passes, not one each; and while an org's slots are all taken, submissions
 * cost none (a queue behind a busy plan is the common case under load). A failed pass is retried after a second;
 * the periodic sweep covers whatever a crashed replica left behind (committed jobs whose pass never ran).
 */
export function startScheduler({ db, logger, plans, sweepIntervalMs, fullRecheckMs = 1_000 }: SchedulerOptions): Scheduler {
  const running = new Map<string, { again: boolean; done: Promise<void> }>();
  const fullUntil = new Map<string, number>();
  const counts = { passes: 0, skipped: 0 };
  let stopped = false;

  const runPasses = async (orgId: string, entry: { again: boolean }) => {
    do {
      entry.again = false;
      try {
        counts.passes += 1;
        const { dispatched, full } = await dispatchWaitingJobs(db, orgId, plans);
        if (full) fullUntil.set(orgId, Date.now() + fullRecheckMs);
        else fullUntil.delete(orgId);
        if (fullUntil.size > 100_000) fullUntil.clear(); // bound memory; worst case is a few extra passes
        if (dispatched > 0) logger.debug({ orgId, dispatched }, "dispatched waiting jobs");
      } catch (error) {
        logger.warn({ err: error, orgId }, "scheduling pass failed; retrying");
        await new Promise((resolve) => setTimeout(resolve, 1000));
        entry.again = !stopped;
      }
    } while (entry.again && !stopped);
  };

  const requestPass = (orgId: string, reason: PassReason = "submitted") => {
    if (stopped) return;
    if (reason !== "submitted") fullUntil.delete(orgId);
    else if ((fullUntil.get(orgId) ?? 0) > Date.now()) {
      counts.skipped += 1;
      return;
    }
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
      for (const orgId of await orgsWithWaitingJobs(db)) requestPass(orgId, "sweep");
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
    stats: () => ({ ...counts }),
    idle,
    stop: async () => {
      stopped = true;
      clearInterval(timer);
      await idle();
    },
  };
}
