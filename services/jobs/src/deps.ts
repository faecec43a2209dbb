import type { Kysely } from "kysely";
import type { Plan, PlanName } from "@renderbus/plans";
import type { Logger } from "@renderbus/telemetry";
import type { CreditCheck } from "./billing/credit-check.js";
import type { JobsDatabase } from "./db/jobs-database.js";
import type { JobCreator } from "./job/job-creator.js";
import type { Scheduler } from "./scheduler/scheduler.js";
import type { QueuedJobsCap } from "./submit-job/queued-jobs-cap.js";
import type { HoldLimits } from "./watchdog/job-holds.js";

/** What the jobs operations need; built once in service.ts. */
export interface JobsDeps {
  db: Kysely<JobsDatabase>;
  /** Stores new jobs outside batches, group-committed. */
  jobCreator: JobCreator;
  plans: Record<PlanName, Plan>;
  credits: CreditCheck;
  scheduler: Scheduler;
  logger: Logger;
  idempotency: { ttlMs: number; staleMs: number };
  /** The plan's cap on jobs waiting for a slot, checked at submission. */
  queuedJobs: QueuedJobsCap;
  /** How far a worker's holds keep a job from the watchdog (JOB_HOLD_TTL_MS, JOB_HOLD_MAX_MS). */
  holds: HoldLimits;
}
