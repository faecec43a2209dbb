import { hostname } from "node:os";
import { randomBytes } from "node:crypto";
import { Bus, STREAMS, jobProgressSubject } from "@renderbus/bus";
import { auth, jobs } from "@renderbus/contracts";
import { AppError } from "@renderbus/errors";
import { DEFAULT_PLANS } from "@renderbus/plans";
import { createRpcClient, serviceIdentity } from "@renderbus/rpc";
import { createObjectStore, type ObjectStore } from "@renderbus/storage";
import { createUploadStore } from "@renderbus/uploads";
import type { Logger, Registry } from "@renderbus/telemetry";
import type { WorkerConfig } from "./config.js";
import { startJobHolder } from "./dispatch/job-holder.js";
import { consumeDispatches } from "./dispatch/consume-dispatches.js";
import { CrashLedger, WORKER_ATTEMPTS } from "./dispatch/crash-ledger.js";
import { CRASHED_ONCE_MESSAGE, dispatchHandler } from "./dispatch/handle-dispatch.js";
import { RunningJobs } from "./dispatch/running-jobs.js";
import { createInputAgent } from "./fetch-input/guarded-agent.js";
import { providerError } from "./job-failure.js";
import { registerWorkerMetrics } from "./metrics.js";
import { configureMediaCaps } from "./media/media-caps.js";
import type { JobRunnerDeps } from "./run-job/process-dispatch.js";
import { chooseSandbox, configureSandbox } from "./sandbox/sandbox.js";
import { startOutputPruning } from "./retention/prune-outputs.js";

export interface WorkerService {
  workerId: string;
  /** Taking work: connected to NATS and not shutting down (the metrics port's `/readyz`, a Kubernetes readiness probe). */
  isReady(): boolean;
  /** Stops taking work; jobs in progress are stopped and handed back to the queue for another replica. */
  stop(): Promise<void>;
  /** For runService's fatal log line: the job whose work threw (when known) and the jobs in hand. */
  fatalContext(): Record<string, unknown>;
  /**
   * Before a fatal exit: the job known to have crashed the process is failed (its message ended), the other jobs in
   * hand are handed back to the queue at once, and their ffmpeg processes are stopped.
   */
  onFatal(error: unknown): Promise<void>;
}

export interface WorkerServiceOptions {
  logger: Logger;
  /** The process's Prometheus registry (served on METRICS_PORT by runService). */
  metrics?: Registry;
  /** Replaces the store STORAGE names (tests). */
  outputs?: ObjectStore;
  /** Called with each ffmpeg process id (tests check that a cancelled job's process is gone). */
  onProviderSpawn?: (jobId: string, pid: number) => void;
}

/**
 * Starts the provider runner: pulls `jobs.dispatch.>` work from the shared `workers` durable, runs each job, and
 * stops a job's ffmpeg when `jobs.events.job.cancelled` names it.
 */
export async function startWorkerService(config: WorkerConfig, options: WorkerServiceOptions): Promise<WorkerService> {
  const { logger } = options;
  // Before anything connects: in production a worker that cannot sandbox ffmpeg refuses to start.
  configureSandbox(await chooseSandbox(config, logger));
  configureMediaCaps({ maxPixels: config.MEDIA_MAX_PIXELS, maxFps: config.MEDIA_MAX_FPS, outputMaxBytes: config.OUTPUT_MAX_BYTES });
  const workerId = config.WORKER_ID ?? `${hostname()}-${process.pid}-${randomBytes(3).toString("hex")}`;
  // Before it connects too: without real call-token keys or a protected gRPC transport, production refuses to start.
  const identity = serviceIdentity("worker", config);
  const bus = await Bus.connect({ url: config.NATS_URL, name: `worker-${workerId}`, namespace: config.NATS_NAMESPACE, replicas: config.NATS_REPLICAS, logger });
  // Not JOBS_EVENTS: the worker only listens to cancel events over core NATS, and its NATS user may not change that
  // stream (a compromised worker could otherwise cut every subscriber's history; libs/bus nats-permissions.ts).
  await bus.ensureStreams([STREAMS.jobDispatch, WORKER_ATTEMPTS]);
  const jobsClient = createRpcClient(jobs.JobsClient, config.JOBS_GRPC_ADDRESS, identity);
  const billingClient = createRpcClient(auth.BillingClient, config.AUTH_GRPC_ADDRESS, identity);
  const inputAgent = createInputAgent({
    allowPrivateAddresses: config.ALLOW_PRIVATE_ADDRESSES,
    connectTimeoutMs: config.INPUT_CONNECT_TIMEOUT_MS,
    headersTimeoutMs: config.INPUT_HEADERS_TIMEOUT_MS,
    bodyIdleTimeoutMs: config.INPUT_BODY_IDLE_TIMEOUT_MS,
  });
  // Outputs outlive their download links by nothing: once the retention period is over, the files go too.
  const retentionMs = config.OUTPUT_RETENTION_DAYS * 24 * 60 * 60 * 1000;
  const deps: JobRunnerDeps = {
    jobs: jobsClient,
    billing: billingClient,
    outputs: options.outputs ?? createObjectStore(config, { area: "outputs", localDir: config.OUTPUT_DIR }),
    uploads: createUploadStore(config, { localDir: config.UPLOAD_DIR, retentionMs: config.UPLOAD_RETENTION_HOURS * 3_600_000 }),
    inputAgent,
    logger,
    workerId,
    publicUrl: config.PUBLIC_URL,
    outputSigningSecret: config.OUTPUT_SIGNING_SECRET,
    outputRetentionMs: retentionMs,
    inputFetchTimeoutMs: config.INPUT_FETCH_TIMEOUT_MS,
    inputMinBytesPerSecond: config.INPUT_MIN_BYTES_PER_SECOND,
    // Ephemeral: a core NATS message per tick, no event-store event (docs/concepts.md, "Progress"). None with
    // WORKER_PROGRESS=off.
    ...(config.WORKER_PROGRESS === "on"
      ? {
          publishProgress: (message: Parameters<NonNullable<JobRunnerDeps["publishProgress"]>>[0]) => {
            const subject = jobProgressSubject(message.orgId, message.jobId);
            if (subject && !bus.nc.isClosed()) bus.notify(subject, message);
          },
        }
      : {}),
    // For a work message without limits: the free plan's.
    fallbackLimits: { maxRunSeconds: DEFAULT_PLANS.free.maxRunSeconds, maxInputBytes: DEFAULT_PLANS.free.maxInputBytes },
  };
  const running = new RunningJobs();
  // Each job in hand is held every second from its work message to its settling (job-holder.ts): that keeps it from
  // the jobs service's watchdog while its inputs download or its output is stored, and a hold answered CONFLICT is a
  // cancel this process missed on core NATS.
  const jobHolder = startJobHolder({ running, jobs: jobsClient, workerId, logger });
  const crashes = new CrashLedger(bus, workerId, logger);
  const crashHook = config.WORKER_TEST_CRASH_HOOK && config.MODE !== "production";
  if (crashHook) logger.warn("WORKER_TEST_CRASH_HOOK is on: an input URL with ?rb-test-crash= crashes this worker");
  /** Set by onFatal: from then on nothing settles a message or clears a marker but onFatal itself. */
  let dying = false;
  const failJob = (jobId: string, message: string) =>
    jobsClient.failJob({ jobId, error: { code: "PROVIDER_ERROR", message: providerError(message).message } }).catch((reportError: unknown) => {
      // CONFLICT: the job already ended.
      if (!(reportError instanceof AppError && reportError.code === "CONFLICT")) throw reportError;
    });
  const metrics = options.metrics ? registerWorkerMetrics(options.metrics, bus) : undefined;

  const stopPruning = startOutputPruning({ outputs: deps.outputs, retentionMs, logger });
  let shuttingDown = false;

  // Core NATS sees JetStream publishes too; a missed cancel is covered by the holds (and CompleteJob) answering CONFLICT.
  const unlisten = bus.listen<{ jobId?: string }>("jobs.events.job.cancelled", (event) => {
    if (event?.jobId && running.cancel(event.jobId)) logger.info({ jobId: event.jobId }, "cancel received; stopping provider");
  });

  const consumer = await consumeDispatches({
    bus,
    logger,
    concurrency: config.WORKER_CONCURRENCY,
    ackWaitMs: config.WORKER_ACK_WAIT_MS,
    handle: dispatchHandler({
      logger,
      runner: deps,
      running,
      crashes,
      ...(metrics ? { metrics } : {}),
      failJob,
      crashHook,
      ...(options.onProviderSpawn ? { onProviderSpawn: options.onProviderSpawn } : {}),
      dying: () => dying,
      shuttingDown: () => shuttingDown,
    }),
  });
  logger.info({ workerId, concurrency: config.WORKER_CONCURRENCY, mode: config.MODE, storage: deps.outputs.kind }, "worker started");

  return {
    workerId,
    isReady: () => !shuttingDown && !bus.nc.isClosed() && !bus.nc.isDraining() && consumer.isReady(),
    fatalContext() {
      return { jobId: running.current(), runningJobIds: running.entries().map(([jobId]) => jobId) };
    },
    async onFatal() {
      dying = true;
      const inHand = running.entries();
      // The job whose callback threw, else the only one running; with several and no context, none is blamed: each
      // comes back with its marker (a crash on its count).
      const culprit = running.current() ?? (inHand.length === 1 ? inHand[0]![0] : undefined);
      await Promise.all(
        inHand.map(async ([jobId, delivery]) => {
          try {
            if (jobId === culprit) {
              await failJob(jobId, CRASHED_ONCE_MESSAGE);
              // Its marker stays: should the term be lost, the next delivery counts this crash and ends the job.
              delivery?.settle({ term: CRASHED_ONCE_MESSAGE });
              logger.error({ jobId }, "the job that crashed the worker is failed");
            } else {
              if (culprit) await crashes.end(jobId);
              delivery?.settle({ retryAfterMs: 0 });
              logger.info({ jobId }, "job handed back to the queue: the worker is exiting");
            }
          } catch (error) {
            // Its marker stays: the next delivery counts this crash.
            logger.error({ err: error, jobId }, "could not settle a job before exiting");
          }
        }),
      );
      running.cancelAll();
      await bus.nc.flush();
    },
    async stop() {
      shuttingDown = true;
      stopPruning();
      jobHolder.stop();
      const stopping = consumer.stop();
      running.cancelAll();
      await stopping;
      unlisten();
      await bus.close();
      jobsClient.close();
      billingClient.close();
      await inputAgent.close();
    },
  };
}
