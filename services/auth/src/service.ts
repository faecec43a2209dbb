import { Bus, STREAMS } from "@renderbus/bus";
import { auth } from "@renderbus/contracts";
import { startOutboxRelay, startRetentionSweeper } from "@renderbus/db";
import { createRpcServer, serviceIdentity } from "@renderbus/rpc";
import type { Logger } from "@renderbus/telemetry";
import type { AuthConfig } from "./config.js";
import { AUTH_SCHEMA } from "./database.js";
import { openAuthResources } from "./open-auth-resources.js";
import { LastUsedRecorder } from "./api-keys/api-keys.service.js";
import { startJobChargesConsumer } from "./billing/job-charges.consumer.js";
import { startEndpointAlerts } from "./alerts/endpoint-disabled.consumer.js";
import { smtpMailer } from "./email/mailer.js";
import { startCreditRenewals } from "./billing/credit-renewals.js";
import { authRpc } from "./rpc/auth.rpc.js";
import { authRetentionSteps } from "./retention/prune.js";
import { billingRpc } from "./rpc/billing.rpc.js";
import { createBetterAuth } from "./sessions/better-auth.js";
import { startSessionHttpServer } from "./sessions/http-server.js";

export interface AuthService {
  grpcPort: number;
  httpPort: number;
  stop(): Promise<void>;
}

/**
 * Starts the auth service: migrates the `auth` schema (Better Auth's tables, then our own), serves gRPC Auth + Billing
 * and Better Auth's `/auth/*` over HTTP, relays the outbox to `auth.events.*`, settles credits from job events, and
 * (with SMTP_URL) emails an org's admins when the dispatcher disabled one of its endpoints.
 */
export async function startAuthService(config: AuthConfig, { logger }: { logger: Logger }): Promise<AuthService> {
  const identity = serviceIdentity("auth", config);
  const store = await openAuthResources(config);
  const betterAuth = createBetterAuth(config, store, logger);

  const bus = await Bus.connect({ url: config.NATS_URL, name: "auth", namespace: config.NATS_NAMESPACE, replicas: config.NATS_REPLICAS, logger });
  await bus.ensureStreams([STREAMS.authEvents, STREAMS.jobEvents, STREAMS.webhookEvents]);
  const relay = await startOutboxRelay({ pool: store.pool, schema: AUTH_SCHEMA, bus, logger });
  const charges = await startJobChargesConsumer(bus, store, logger);
  // Without a mail server nobody is mailed: the durable is not made, so nothing waits for one.
  const alerts = config.SMTP_URL ? await startEndpointAlerts({ bus, db: store.db, mailer: smtpMailer(config), publicUrl: config.PUBLIC_URL, logger, perOrgPerHour: config.ENDPOINT_ALERTS_PER_ORG_PER_HOUR }) : undefined;
  const renewals = startCreditRenewals({ db: store.db, plans: store.plans, intervalMs: config.CREDITS_RENEWAL_INTERVAL_MS, logger });
  const retention = startRetentionSweeper({
    intervalMs: config.RETENTION_SWEEP_INTERVAL_MS,
    logger,
    steps: authRetentionSteps(store.db, { settledJobRetentionMs: config.SETTLED_JOB_RETENTION_DAYS * 24 * 60 * 60 * 1000 }),
  });

  const lastUsed = new LastUsedRecorder(store, logger);
  const rpc = createRpcServer(identity, logger);
  rpc.add(auth.AuthService, authRpc(store, betterAuth, lastUsed));
  rpc.add(auth.BillingService, billingRpc(store));
  const grpcPort = await rpc.listen(config.AUTH_GRPC_PORT, config.AUTH_BIND_HOST);
  // A JetStream consume loop that is down (its durable deleted, being re-created) answers health NOT_SERVING.
  rpc.setServing(bus.isReady());
  bus.onReadinessChange((ready) => rpc.setServing(ready));
  const http = await startSessionHttpServer(betterAuth, config.AUTH_HTTP_PORT, config.AUTH_BIND_HOST, logger, { store, config });
  logger.info({ grpcPort, httpPort: http.port }, "auth service started");

  let stopping: Promise<void> | undefined;
  return {
    grpcPort,
    httpPort: http.port,
    stop: () =>
      (stopping ??= (async () => {
        await Promise.all([rpc.shutdown(), http.close()]);
        await charges.stop();
        await alerts?.stop();
        await renewals.stop();
        await retention.stop();
        await relay.stop();
        await bus.close();
        await store.close();
        logger.info("auth service stopped");
      })()),
  };
}
