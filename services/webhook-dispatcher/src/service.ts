import { sql } from "kysely";
import type { AddressPolicy } from "@renderbus/address-guard";
import { Bus, STREAMS } from "@renderbus/bus";
import { auth, authEvents, webhooks } from "@renderbus/contracts";
import { createDatabase, migrateToLatest, startOutboxRelay, startRetentionSweeper, type RetentionSweeper } from "@renderbus/db";
import { createRpcClient, createRpcServer, serviceIdentity } from "@renderbus/rpc";
import { registerGaugeReader, startMetricsServer, type Logger } from "@renderbus/telemetry";
import { migrations } from "../migrations/index.js";
import type { DispatcherConfig } from "./config.js";
import { DISPATCHER_SCHEMA, type DispatcherTables } from "./database.js";
import { startJobEventsConsumer } from "./ingest/job-events.consumer.js";
import { followEndpointChanges } from "./endpoints/endpoint-changes.js";
import { startJobProgressListener, type JobProgressListener } from "./ingest/job-progress.listener.js";
import { createDispatcherMetrics, type DispatcherMetrics } from "./metrics.js";
import { webhooksRpc } from "./rpc/webhooks.rpc.js";
import { startDeliverySender } from "./sending/delivery-sender.js";
import { createWebhookAgent } from "./sending/post-webhook.js";
import { createWebhookTargets } from "./targets/webhook-targets.js";
import { createSecretBox, secretsKeyringOf } from "@renderbus/secret-box";
import { createEndpointDirectory } from "./endpoints/endpoint-directory.js";
import { createEndpointHealth } from "./endpoints/endpoint-health.js";
import { endpointsRpc } from "./rpc/endpoints.rpc.js";
import { startWaitingAnnouncer } from "./deliveries/waiting-announcer.js";
import { dispatcherRetentionSteps } from "./retention/prune.js";

export interface DispatcherService {
  /** Port of the `Webhooks` gRPC server. */
  grpcPort: number;
  /** Port of the Prometheus `/metrics` endpoint, when METRICS_PORT is set. */
  metricsPort: number | undefined;
  metrics: DispatcherMetrics;
  /** Served by runService on WEBHOOK_DISPATCHER_METRICS_PORT when METRICS_PORT is not set. */
  metricsRegistry: DispatcherMetrics["registry"];
  /** Prunes expired rows every RETENTION_SWEEP_INTERVAL_MS; `sweep()` runs it now. */
  retention: RetentionSweeper;
  /** Turns live progress into `job.progress` deliveries. */
  progress: JobProgressListener;
  /** Stops taking events, aborts attempts in flight (their deliveries stay due), drains the outbox, closes. */
  stop(): Promise<void>;
}

/**
 * Starts the webhook dispatcher: migrates the `dispatcher` schema, consumes job events into deliveries, sends them
 * from the Postgres due-time queue, publishes delivery changes through the outbox, and serves `Webhooks` over gRPC.
 */
export async function startDispatcherService(
  config: DispatcherConfig,
  { logger, addressPolicy }: { logger: Logger; /** Tests: which addresses count as private for response bodies. */ addressPolicy?: AddressPolicy },
): Promise<DispatcherService> {
  const identity = serviceIdentity("webhook-dispatcher", config);
  const database = createDatabase<DispatcherTables>({
    url: config.DATABASE_URL,
    schema: DISPATCHER_SCHEMA,
    maxConnections: config.DATABASE_MAX_CONNECTIONS,
    applicationName: "webhook-dispatcher",
    idleInTransactionTimeoutMs: config.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS,
  });
  const { db } = database;
  await migrateToLatest(db, DISPATCHER_SCHEMA, migrations);

  const bus = await Bus.connect({ url: config.NATS_URL, name: "webhook-dispatcher", namespace: config.NATS_NAMESPACE, replicas: config.NATS_REPLICAS, logger });
  await bus.ensureStreams([STREAMS.jobEvents, STREAMS.webhookEvents]);

  const authClient = createRpcClient(auth.AuthClient, config.AUTH_GRPC_ADDRESS, identity);
  const targets = createWebhookTargets(authClient, { ttlMs: config.WEBHOOK_TARGET_CACHE_MS });
  const box = createSecretBox(secretsKeyringOf(config), { acceptV1: config.SECRETS_ACCEPT_V1 });
  const endpoints = createEndpointDirectory(db, targets, box, { ttlMs: config.WEBHOOK_ENDPOINT_CACHE_MS });
  // Caches follow changes as they commit: endpoint rows by NOTIFY from any replica, targets by the auth service's
  // event. A core subscription misses what is published while the connection is down, so a reconnect forgets all.
  const stopListening = bus.listen<authEvents.OrgUpdated>("auth.events.org.updated", (event) => endpoints.forget(event.orgId));
  const stopForgettingOnReconnect = bus.onReconnect(() => endpoints.forgetAll());
  const endpointChanges = await followEndpointChanges({ databaseUrl: config.DATABASE_URL, directory: endpoints, logger });

  const metrics = createDispatcherMetrics(async () => {
    const row = await db
      .selectFrom("deliveries")
      .select(sql<number>`count(*)::int`.as("count"))
      .where("status", "=", "pending")
      .where("attempts", ">", 0)
      .executeTakeFirst();
    return row?.count ?? 0;
  });

  const agent = createWebhookAgent({
    guardAddresses: !config.ALLOW_PRIVATE_ADDRESSES,
    connectTimeoutMs: config.WEBHOOK_TIMEOUT_MS,
  });
  const leaseMs = config.WEBHOOK_TIMEOUT_MS + config.DISPATCHER_LEASE_GRACE_MS;
  // The sender wakes itself for endpoint.disabled deliveries; it exists before the health checks are called.
  let wakeSender = () => {};
  const health = createEndpointHealth({
    db,
    endpoints,
    logger,
    windowMs: config.WEBHOOK_DISABLE_AFTER,
    minFailures: config.WEBHOOK_DISABLE_MIN_FAILURES,
    wake: () => wakeSender(),
  });
  const sender = await startDeliverySender({
    db,
    databaseUrl: config.DATABASE_URL,
    endpoints,
    health,
    agent,
    metrics,
    logger,
    concurrency: config.DISPATCHER_CONCURRENCY,
    orgMaxInFlight: config.DISPATCHER_ORG_MAX_IN_FLIGHT,
    timeoutMs: config.WEBHOOK_TIMEOUT_MS,
    retryScheduleMs: config.WEBHOOK_RETRY_SCHEDULE_MS,
    extendedRetryScheduleMs: config.WEBHOOK_EXTENDED_RETRY_SCHEDULE_MS,
    brand: config.WEBHOOK_HEADER_BRAND,
    pollIntervalMs: config.DISPATCHER_POLL_INTERVAL_MS,
    leaseMs,
    allowPrivateAddresses: config.ALLOW_PRIVATE_ADDRESSES,
    addressPolicy,
  });
  wakeSender = () => sender.wake();
  const relay = await startOutboxRelay({ pool: database.pool, schema: DISPATCHER_SCHEMA, bus, logger });
  const announcer = startWaitingAnnouncer({ db, logger, afterMs: config.DISPATCHER_ANNOUNCE_WAITING_AFTER_MS, intervalMs: config.DISPATCHER_ANNOUNCE_WAITING_AFTER_MS });
  const day = 24 * 60 * 60 * 1000;
  const retention = startRetentionSweeper({
    intervalMs: config.RETENTION_SWEEP_INTERVAL_MS,
    logger,
    steps: dispatcherRetentionSteps(db, {
      deliveryRetentionMs: config.DELIVERY_RETENTION_DAYS * day,
      processedEventRetentionMs: config.PROCESSED_EVENT_RETENTION_DAYS * day,
    }),
  });
  registerGaugeReader(metrics.registry, { name: "outbox_backlog", help: "Committed events not yet published to JetStream" }, () => relay.backlog());
  const consumer = await startJobEventsConsumer({
    bus,
    db,
    endpoints,
    logger,
    concurrency: config.DISPATCHER_CONSUMER_CONCURRENCY,
    ackWaitMs: config.DISPATCHER_ACK_WAIT_MS,
    sender,
    // An event waits unacked, and the consumer's buffer (twice its concurrency) behind the events waiting: a buffered
    // event may wait for two rounds of them, then its own; a quarter of the ack wait keeps all three below it.
    slotWait: { idleMs: config.DISPATCHER_INGEST_SLOT_WAIT_MS, maxMs: config.DISPATCHER_ACK_WAIT_MS / 4 },
  });
  const progress = startJobProgressListener({
    bus,
    db,
    endpoints,
    logger,
    intervalMs: config.WEBHOOK_PROGRESS_INTERVAL_MS,
    maxInFlight: config.DISPATCHER_PROGRESS_MAX_IN_FLIGHT,
    wake: () => sender.wake(),
  });

  const rpc = createRpcServer(identity, logger);
  rpc.add(webhooks.WebhooksService, {
    ...webhooksRpc({ db, targets, endpoints, sender, leaseMs }),
    ...endpointsRpc({
      db,
      directory: endpoints,
      box,
      mode: config.MODE,
      maxEndpoints: config.WEBHOOK_ENDPOINTS_MAX,
      recoverMax: config.WEBHOOK_RECOVER_MAX,
      recoverIntervalMs: config.WEBHOOK_RECOVER_INTERVAL_MS,
      wake: () => sender.wake(),
    }),
  });
  const grpcPort = await rpc.listen(config.WEBHOOKS_GRPC_PORT, config.WEBHOOKS_GRPC_HOST);
  // A JetStream consume loop that is down (its durable deleted, being re-created) answers health NOT_SERVING.
  rpc.setServing(bus.isReady());
  bus.onReadinessChange((ready) => rpc.setServing(ready));

  // Served on every interface so Prometheus can scrape the pod; METRICS_PORT unset disables it.
  const metricsServer = config.METRICS_PORT === undefined ? undefined : await startMetricsServer(metrics.registry, config.METRICS_PORT);
  const metricsPort = metricsServer?.port;
  logger.info({ grpcPort, metricsPort }, "webhook dispatcher started");

  return {
    grpcPort,
    metricsPort,
    metrics,
    metricsRegistry: metrics.registry,
    retention,
    progress,
    async stop() {
      await rpc.shutdown(2000);
      await retention.stop();
      await progress.stop();
      // Events waiting for an attempt slot would hold the consumer's drain until one frees: they go on now.
      sender.closeAdmissions();
      await consumer.stop();
      await sender.stop();
      await announcer.stop();
      // Publish what is committed before leaving, for at most 5 s (an unreachable NATS must not hang shutdown).
      await relay.drained(5000);
      await relay.stop();
      stopListening();
      stopForgettingOnReconnect();
      await endpointChanges.stop();
      await bus.close();
      authClient.close();
      await agent.close().catch(() => undefined);
      await metricsServer?.close();
      await database.close();
    },
  };
}
