import { Bus, STREAMS, type ConsumerHandle } from "@renderbus/bus";
import { jobs } from "@renderbus/contracts";
import { createDatabase, migrateToLatest, startOutboxRelay, startRetentionSweeper, type OutboxRelay, type RetentionSweeper } from "@renderbus/db";
import { loadPlans } from "@renderbus/plans";
import { createRpcServer, serviceIdentity } from "@renderbus/rpc";
import type { Logger, Registry } from "@renderbus/telemetry";
import type { Kysely } from "kysely";
import { JOBS_SCHEMA, migrations } from "../migrations/index.js";
import { billingCreditCheck, type CreditCheck } from "./billing/credit-check.js";
import type { JobsConfig } from "./config.js";
import type { JobsDatabase } from "./db/jobs-database.js";
import type { JobsDeps } from "./deps.js";
import { JobCreator } from "./job/job-creator.js";
import { startDeliveryConsumer } from "./deliveries/delivery-consumer.js";
import { startOrgPlanConsumer } from "./plans/org-plan-consumer.js";
import { registerJobsMetrics } from "./metrics.js";
import { jobsRetentionSteps } from "./retention/prune.js";
import { jobsRpc } from "./rpc/jobs.rpc.js";
import { startScheduler, type Scheduler } from "./scheduler/scheduler.js";
import { QueuedJobsCap } from "./submit-job/queued-jobs-cap.js";
import { dispatchQueueIn } from "./watchdog/dispatch-queue.js";
import { startJobTimeoutWatchdog, type JobTimeoutWatchdog } from "./watchdog/job-timeout-watchdog.js";

const DAY_MS = 24 * 60 * 60 * 1000;

/** A running jobs service. */
export interface JobsService {
  /** The bound gRPC port (JOBS_GRPC_PORT, or a free one when 0). */
  grpcPort: number;
  /** Exposed for tests and operations: the outbox relay (`drained()`), the scheduler (`idle()`), the watchdog, the database. */
  relay: OutboxRelay;
  scheduler: Scheduler;
  watchdog: JobTimeoutWatchdog;
  /** Prunes expired rows every RETENTION_SWEEP_INTERVAL_MS; `sweep()` runs it now. */
  retention: RetentionSweeper;
  db: Kysely<JobsDatabase>;
  /** Stops taking calls, finishes in-flight ones, drains the scheduler, the consumer and the relay, closes pools. */
  stop(): Promise<void>;
}

export interface JobsServiceOptions {
  logger: Logger;
  /** The process's Prometheus registry (served on METRICS_PORT by runService). */
  metrics?: Registry;
  /** Replaces the auth service's Billing check (tools that run without the auth service). */
  credits?: CreditCheck;
}

/** Starts the jobs service: migrates its schema, declares streams, starts relay, scheduler, consumer and gRPC. */
export async function startJobsService(config: JobsConfig, { logger, credits, metrics }: JobsServiceOptions): Promise<JobsService> {
  const identity = serviceIdentity("jobs", config);
  const database = createDatabase<JobsDatabase>({
    url: config.DATABASE_URL,
    schema: JOBS_SCHEMA,
    maxConnections: config.DATABASE_MAX_CONNECTIONS,
    applicationName: "jobs",
    idleInTransactionTimeoutMs: config.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
  });
  await migrateToLatest(database.db, JOBS_SCHEMA, migrations);

  const bus = await Bus.connect({ url: config.NATS_URL, name: "jobs", namespace: config.NATS_NAMESPACE, replicas: config.NATS_REPLICAS, logger });
  await bus.ensureStreams([STREAMS.jobEvents, STREAMS.jobDispatch, STREAMS.webhookEvents, STREAMS.authEvents]);
  const relay = await startOutboxRelay({ pool: database.pool, schema: JOBS_SCHEMA, bus, logger });
  if (metrics) registerJobsMetrics(metrics, database.db, relay);
  const plans = loadPlans(config.PLANS_JSON);
  const scheduler = startScheduler({ db: database.db, logger, plans, sweepIntervalMs: config.JOBS_SCHEDULER_SWEEP_MS, fullRecheckMs: config.JOBS_SCHEDULER_FULL_RECHECK_MS });
  const creditCheck = credits ?? billingCreditCheck(config.AUTH_GRPC_ADDRESS, identity, { cacheMs: config.CREDIT_CHECK_CACHE_MS });
  const deps: JobsDeps = {
    db: database.db,
    jobCreator: new JobCreator(database.db),
    plans,
    credits: creditCheck,
    scheduler,
    logger,
    idempotency: { ttlMs: config.IDEMPOTENCY_TTL_MS, staleMs: config.IDEMPOTENCY_STALE_MS },
    queuedJobs: new QueuedJobsCap(database.db),
    holds: { ttlMs: config.JOB_HOLD_TTL_MS, maxMs: config.JOB_HOLD_MAX_MS },
  };
  const watchdog = startJobTimeoutWatchdog(deps, {
    intervalMs: config.JOBS_WATCHDOG_INTERVAL_MS,
    graceMs: config.JOBS_WATCHDOG_GRACE_MS,
    dispatchedTimeoutMs: config.DISPATCHED_TIMEOUT_MS,
    dispatchQueue: dispatchQueueIn(bus),
    resend: { afterMs: config.DISPATCH_RESEND_AFTER_MS, max: config.DISPATCH_RESENDS },
    holds: deps.holds,
  });
  const deliveries: ConsumerHandle = await startDeliveryConsumer(bus, database.db);
  const orgPlans: ConsumerHandle = await startOrgPlanConsumer(bus, database.db, scheduler);
  const retention = startRetentionSweeper({
    intervalMs: config.RETENTION_SWEEP_INTERVAL_MS,
    logger,
    steps: jobsRetentionSteps(database.db, { idempotencyTtlMs: config.IDEMPOTENCY_TTL_MS, deliveryRetentionMs: config.DELIVERY_RETENTION_DAYS * DAY_MS }),
  });

  const rpc = createRpcServer(identity, logger);
  rpc.add(jobs.JobsService, jobsRpc(deps));
  const grpcPort = await rpc.listen(config.JOBS_GRPC_PORT, config.JOBS_GRPC_HOST);
  // A JetStream consume loop that is down (its durable deleted, being re-created) answers health NOT_SERVING.
  rpc.setServing(bus.isReady());
  bus.onReadinessChange((ready) => rpc.setServing(ready));
  logger.info({ grpcPort }, "jobs service listening");

  return {
    grpcPort,
    relay,
    scheduler,
    watchdog,
    retention,
    db: database.db,
    stop: async () => {
      await rpc.shutdown();
      await watchdog.stop();
      await retention.stop();
      await scheduler.stop();
      await deliveries.stop();
      await orgPlans.stop();
      // Publish what is committed before leaving, for at most 5 s (an unreachable NATS must not hang shutdown).
      await relay.drained(5000);
      await relay.stop();
      await bus.close();
      creditCheck.close();
      await database.close();
    },
  };
}
