import { z } from "zod";
import { commonConfigSchema, databaseVariables, env, streamVariables } from "@renderbus/config";
import { serviceTokenKeysVariable } from "@renderbus/rpc";

/** Jobs service configuration: parsed once from the environment in main.ts. */
export const jobsConfigSchema = commonConfigSchema.extend({
  ...databaseVariables,
  ...streamVariables,
  JOBS_GRPC_PORT: env.port(50052),
  JOBS_GRPC_HOST: z.string().default("127.0.0.1"),
  /** The auth service, whose Billing part answers the credit check at submission. */
  AUTH_GRPC_ADDRESS: z.string().default("127.0.0.1:50051"),
  /** How long a balance that covered a submission's credit check is reused for the org's next submissions. */
  CREDIT_CHECK_CACHE_MS: z.coerce.number().int().min(0).default(1_000),
  /** Overrides of the plan table (`@renderbus/plans`). */
  PLANS_JSON: z.string().optional(),
  /** Safety-net pass that dispatches waiting jobs of every org (after a crash between commit and scheduling). */
  JOBS_SCHEDULER_SWEEP_MS: z.coerce.number().int().positive().default(30_000),
  /** After a pass finds an org's slots all taken, its submissions skip their pass this long (a freed slot never waits). */
  JOBS_SCHEDULER_FULL_RECHECK_MS: z.coerce.number().int().min(0).default(1_000),
  /** How long an Idempotency-Key answers with the first response. */
  IDEMPOTENCY_TTL_MS: z.coerce.number().int().positive().default(24 * 60 * 60 * 1000),
  /** A claimed key whose request never finished (crashed replica) is given to a new request after this long. */
  IDEMPOTENCY_STALE_MS: z.coerce.number().int().positive().default(60_000),
  /** How often the watchdog looks for running jobs past their plan's run time (workers enforce it first). */
  JOBS_WATCHDOG_INTERVAL_MS: z.coerce.number().int().positive().default(10_000),
  /** Extra time a worker gets past the plan's run time before the watchdog fails the job with PROVIDER_TIMEOUT. */
  JOBS_WATCHDOG_GRACE_MS: z.coerce.number().int().min(0).default(30_000),
  /**
   * A job still `dispatched` (no worker started it) this long after the watchdog first saw its work message out of the
   * queue (delivered to a worker, or gone from the stream) is failed with PROVIDER_ERROR: a dropped dispatch, or one
   * that ran out of deliveries, frees its concurrency slot (default 10 min). Time queued for a free worker never counts.
   */
  DISPATCHED_TIMEOUT_MS: z.coerce.number().int().positive().default(10 * 60 * 1000),
  /**
   * A job still `dispatched` this long after its dispatch (or its last resend) whose work message is no longer in the
   * dispatch stream gets it sent again (src/watchdog/resend-lost-dispatches.ts), at most DISPATCH_RESENDS times.
   */
  DISPATCH_RESEND_AFTER_MS: z.coerce.number().int().positive().default(2 * 60 * 1000),
  DISPATCH_RESENDS: z.coerce.number().int().min(0).max(10).default(3),
  /**
   * A worker's HoldJob (sent every second for each job it has in hand, from taking its work message to settling it)
   * keeps the job from both timeouts above for this long after it (src/watchdog/job-holds.ts): a download of large
   * inputs may outlast DISPATCHED_TIMEOUT_MS, storing a large output the run-time grace. The hold is written at most
   * once a sixth of this. Default 3 min.
   */
  JOB_HOLD_TTL_MS: z.coerce.number().int().positive().default(3 * 60 * 1000),
  /**
   * Holds never keep a job past the deadline it would have without them by more than this (a worker hung while
   * holding). Default 3 h: two 5 GB scale-plan inputs at the worker's minimum download rate (2 MiB/s) take 85 min.
   */
  JOB_HOLD_MAX_MS: z.coerce.number().int().positive().default(3 * 60 * 60 * 1000),
  /** How often expired rows (idempotency keys, finished webhook deliveries) are pruned (src/retention/prune.ts). */
  RETENTION_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(60 * 60 * 1000),
  /** Finished webhook deliveries on job records are kept this long (the dispatcher's own retention, same variable). */
  DELIVERY_RETENTION_DAYS: z.coerce.number().positive().default(30),
  DATABASE_MAX_CONNECTIONS: z.coerce.number().int().positive().default(10),
  /** Keys of internal call tokens: this service's Ed25519 private key and its callers' public keys (libs/rpc service-keys.ts, `npm run service-keys`); required in production. */
  SERVICE_TOKEN_KEYS: serviceTokenKeysVariable(),
});

export type JobsConfig = z.infer<typeof jobsConfigSchema>;
