import { Redis } from "ioredis";
import { auth, jobs, webhooks } from "@renderbus/contracts";
import { Bus } from "@renderbus/bus";
import { createRpcClient, serviceIdentity } from "@renderbus/rpc";
import { createMetricsRegistry, instrumentHttpServer, startMetricsServer, type Logger, type Registry } from "@renderbus/telemetry";
import { loadPlans } from "@renderbus/plans";
import { createObjectStore } from "@renderbus/storage";
import { createUploadStore } from "@renderbus/uploads";
import type { GatewayConfig } from "./config.js";
import type { GatewayDeps } from "./deps.js";
import { buildApp } from "./app.js";
import { CredentialResolver } from "./auth/credential-resolver.js";
import { CredentialMarks } from "./auth/credential-marks.js";
import { RateLimiter } from "./auth/rate-limiter.js";
import { JobEventHub } from "./sse/job-event-hub.js";
import { JobProgressHub } from "./sse/job-progress-hub.js";
import { TerminalJobCache } from "./jobs-cache/terminal-job-cache.js";
import { UploadQuota } from "./uploads/upload-quota.js";
import { followDeliveryUpdates } from "./jobs-cache/delivery-updates.js";

/** How often expired uploads are looked for. */
const UPLOAD_SWEEP_INTERVAL_MS = 10 * 60_000;

export interface GatewayService {
  port: number;
  url: string;
  /** Port of Prometheus `/metrics` (GATEWAY_METRICS_PORT), apart from the public HTTP port. */
  metricsPort: number;
  stop(): Promise<void>;
}

/** Starts the gateway: clients to the services, cache invalidation, then the HTTP server. */
export async function startGatewayService(config: GatewayConfig, { logger, metrics }: { logger: Logger; metrics?: Registry }): Promise<GatewayService> {
  // First: a production gateway without real call-token keys or a protected gRPC transport refuses to start before
  // it connects to anything.
  const identity = serviceIdentity("gateway", config);
  const bus = await Bus.connect({ url: config.NATS_URL, name: "gateway", namespace: config.NATS_NAMESPACE, logger });
  // Every API request makes Redis calls (its client's and its org's rate limits, its key's revocation marks): with
  // auto-pipelining the commands of all requests handled in one turn of the event loop go out in one write and come
  // back in one read, instead of a write, a wake-up of Redis and a read each.
  const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 2, enableOfflineQueue: true, lazyConnect: false, enableAutoPipelining: true });
  redis.on("error", (error) => logger.warn({ err: error }, "redis error"));
  const authClient = createRpcClient(auth.AuthClient, config.AUTH_GRPC_ADDRESS, identity);
  // Tests run several systems against one Redis; their NATS namespace keeps their counters and marks apart.
  const redisPrefix = config.NATS_NAMESPACE ? `rb:${config.NATS_NAMESPACE}` : "rb";
  // A revocation mark outlives any cache entry that could still hold the key.
  const marks = new CredentialMarks(redis, { prefix: `${redisPrefix}:auth`, revokedTtlMs: Math.max(60_000, 2 * config.AUTH_CACHE_TTL_MS) });
  const credentials = new CredentialResolver({ auth: authClient, ttlMs: config.AUTH_CACHE_TTL_MS, marks, marksRecheckMs: config.AUTH_MARKS_RECHECK_MS });

  // Revocations and org changes (plan, members, roles) drop cached credentials at once, and are marked in Redis so
  // a replica that missed the message refuses or re-resolves the key within AUTH_MARKS_RECHECK_MS (CredentialMarks).
  const marked = (what: string) => (error: unknown) => logger.warn({ err: error }, `could not mark ${what} in redis`);
  const stopRevoked = bus.listen<{ apiKeyId?: string; keyHash?: string }>("auth.events.api_key.revoked", (event) => void credentials.revokeApiKey(event).catch(marked("a revoked key")));
  const stopGatewayRevoked = bus.listen<{ apiKeyId?: string }>("gateway.notify.api_key.revoked", (event) => credentials.forgetApiKey(event));
  const stopOrgUpdated = bus.listen<{ orgId?: string }>("auth.events.org.updated", (event) => event.orgId && void credentials.orgChanged(event.orgId).catch(marked("an org change")));

  // A finished job changes only through its delivery log: drop it when a delivery of it moves (TTL as safety net).
  const finishedJobs = new TerminalJobCache({ ttlMs: config.JOB_CACHE_TTL_MS });
  const stopFollowingDeliveries = followDeliveryUpdates(bus, finishedJobs);

  const deps: GatewayDeps = {
    config,
    logger,
    plans: loadPlans(config.PLANS_JSON),
    auth: authClient,
    billing: createRpcClient(auth.BillingClient, config.AUTH_GRPC_ADDRESS, identity),
    jobs: createRpcClient(jobs.JobsClient, config.JOBS_GRPC_ADDRESS, identity),
    webhooks: createRpcClient(webhooks.WebhooksClient, config.WEBHOOKS_GRPC_ADDRESS, identity),
    bus,
    redis,
    credentials,
    rateLimiter: new RateLimiter(redis, 60_000, `${redisPrefix}:rl`),
    outputs: createObjectStore(config, { area: "outputs", localDir: config.OUTPUT_DIR }),
    uploads: createUploadStore(config, { localDir: config.UPLOAD_DIR, retentionMs: config.UPLOAD_RETENTION_HOURS * 3_600_000 }),
    uploadQuota: new UploadQuota(redis, { prefix: `${redisPrefix}:uploads` }),
    jobEvents: new JobEventHub(bus),
    jobProgress: new JobProgressHub(bus),
    finishedJobs,
    metrics: metrics ?? createMetricsRegistry("gateway"),
  };
  // Uploads end with their retention (docs/uploads.md); every replica sweeps, a removal already done is skipped.
  const sweepUploads = setInterval(() => {
    deps.uploads.deleteExpired().then(
      (deleted) => deleted > 0 && logger.info({ deleted }, "expired uploads deleted"),
      (error: unknown) => logger.warn({ err: error }, "could not delete expired uploads"),
    );
  }, UPLOAD_SWEEP_INTERVAL_MS);
  sweepUploads.unref();
  const app = await buildApp(deps);
  // A span per request (the root of a job's trace) and request rate/latency by route on /metrics.
  instrumentHttpServer(app, deps.metrics);
  await app.listen({ port: config.GATEWAY_PORT, host: config.GATEWAY_HOST });
  const address = app.server.address();
  const port = typeof address === "object" && address ? address.port : config.GATEWAY_PORT;
  logger.info({ port }, "gateway listening");
  // Off the public listener (SECURITY-AUDIT finding 13); on the same host, so Prometheus reaches it where clients do.
  const metricsServer = await startMetricsServer(deps.metrics, config.GATEWAY_METRICS_PORT, config.GATEWAY_HOST);
  logger.info({ metricsPort: metricsServer.port }, "metrics listening");

  return {
    port,
    url: `http://127.0.0.1:${port}`,
    metricsPort: metricsServer.port,
    stop: async () => {
      // Stop taking requests, let in-flight ones finish, then close clients.
      clearInterval(sweepUploads);
      await app.close();
      await metricsServer.close();
      stopRevoked();
      stopGatewayRevoked();
      stopOrgUpdated();
      stopFollowingDeliveries();
      deps.jobEvents.close();
      deps.jobProgress?.close();
      for (const client of [deps.auth, deps.billing, deps.jobs, deps.webhooks]) client.close();
      redis.disconnect();
      await bus.close();
    },
  };
}
