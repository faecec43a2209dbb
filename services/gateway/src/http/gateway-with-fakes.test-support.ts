import { randomBytes, randomUUID } from "node:crypto";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { FastifyInstance, LightMyRequestResponse } from "fastify";
import { Redis } from "ioredis";
import type { auth, jobs, webhooks } from "@renderbus/contracts";
import { loadPlans } from "@renderbus/plans";
import type { PromiseClient } from "@renderbus/rpc";
import { createLogger, createMetricsRegistry } from "@renderbus/telemetry";
import { testInfra } from "@renderbus/testing";
import { createUploadStore } from "@renderbus/uploads";
import { buildApp } from "../app.js";
import { gatewayConfigSchema, type GatewayConfig } from "../config.js";
import type { GatewayDeps } from "../deps.js";
import { CredentialMarks } from "../auth/credential-marks.js";
import { CredentialResolver } from "../auth/credential-resolver.js";
import { RateLimiter } from "../auth/rate-limiter.js";
import { TerminalJobCache } from "../jobs-cache/terminal-job-cache.js";
import { JobEventHub } from "../sse/job-event-hub.js";
import { UploadQuota } from "../uploads/upload-quota.js";
import type { Bus } from "@renderbus/bus";

/** A fake of a gRPC client: the methods a test gives; any other call fails the request (a 500 the test would see). */
type Fake<C> = Partial<Omit<PromiseClient<C>, "close">>;

export interface FakeServices {
  auth?: Fake<auth.AuthClient>;
  billing?: Fake<auth.BillingClient>;
  jobs?: Fake<jobs.JobsClient>;
  webhooks?: Fake<webhooks.WebhooksClient>;
}

/**
 * One minute windows would reset under a test that straddles a minute boundary: the test's limiter counts every
 * request in the window of the moment it was built (Redis still expires the counters a minute after first use).
 */
const oneWindowRateLimiter = (redis: Redis, prefix: string): RateLimiter => {
  const frozenNow = Date.now();
  return new RateLimiter(redis, 60_000, prefix, () => frozenNow);
};

export interface GatewayWithFakes {
  app: FastifyInstance;
  deps: GatewayDeps;
  /** The local upload store's directory (a fresh one per app). */
  uploadDir: string;
  /** The same Redis prefixes as `deps`, as another gateway replica would use them (for revocation marks). */
  otherReplica(): CredentialResolver;
  close(): Promise<void>;
}

/**
 * The gateway app as service.ts builds it (credential resolution with its Redis marks, Redis rate limits, the route
 * table, the error mapping) over fake gRPC clients: the services behind the gateway are outside what is tested.
 * Redis is the test infrastructure's; every app gets its own key prefix, so tests do not share counters.
 */
export async function gatewayWithFakes(services: FakeServices = {}, env: Record<string, string> = {}): Promise<GatewayWithFakes> {
  const base = { GATEWAY_METRICS_PORT: "0", REDIS_URL: testInfra().redisUrl };
  const config: GatewayConfig = gatewayConfigSchema.parse({ ...base, ...env });
  // A run with STORAGE=s3 (libs/testing global-setup.ts) keeps uploads in its S3-protocol server's bucket here too
  // (outputs stay a stub).
  const storageEnv = Object.fromEntries(Object.entries(process.env).filter(([name]) => name === "STORAGE" || name.startsWith("S3_")));
  const uploadConfig = gatewayConfigSchema.parse({ ...base, ...storageEnv, ...env });
  const redis = new Redis(config.REDIS_URL, { maxRetriesPerRequest: 2 });
  const prefix = `rb:test:${randomUUID()}`;
  const marksOptions = { prefix: `${prefix}:auth`, revokedTtlMs: 60_000 };
  const authClient = clientOf<auth.AuthClient>("auth", services.auth);
  // What each gateway replica builds: its own cache, the marks in Redis shared by all of them.
  const replicaCredentials = () =>
    new CredentialResolver({ auth: authClient, ttlMs: config.AUTH_CACHE_TTL_MS, marks: new CredentialMarks(redis, marksOptions), marksRecheckMs: config.AUTH_MARKS_RECHECK_MS });
  // No NATS here: job events never arrive (waits end by their timeout, or when the app closes).
  const bus = { listen: () => () => undefined, notify: () => undefined, nc: { flush: async () => undefined } };
  const uploadDir = mkdtempSync(join(tmpdir(), "rb-gateway-uploads-"));
  const deps = {
    config,
    logger: createLogger({ service: "gateway-test", level: "silent" }),
    plans: loadPlans(config.PLANS_JSON),
    auth: authClient,
    billing: clientOf<auth.BillingClient>("billing", services.billing),
    jobs: clientOf<jobs.JobsClient>("jobs", services.jobs),
    webhooks: clientOf<webhooks.WebhooksClient>("webhooks", services.webhooks),
    bus,
    redis,
    credentials: replicaCredentials(),
    rateLimiter: oneWindowRateLimiter(redis, `${prefix}:rl`),
    outputs: { open: async () => Promise.reject(new Error("no output store in these tests")) },
    uploads: createUploadStore(uploadConfig, { localDir: uploadDir, retentionMs: config.UPLOAD_RETENTION_HOURS * 3_600_000 }),
    uploadQuota: new UploadQuota(redis, { prefix: `${prefix}:uploads` }),
    jobEvents: new JobEventHub(bus as unknown as Bus),
    finishedJobs: new TerminalJobCache({ ttlMs: config.JOB_CACHE_TTL_MS }),
    metrics: createMetricsRegistry("gateway-test"),
  } as unknown as GatewayDeps;
  const app = await buildApp(deps);
  await app.ready();
  return {
    app,
    deps,
    uploadDir,
    otherReplica: replicaCredentials,
    close: async () => {
      await app.close();
      // What the service's shutdown does after the app (service.ts): the hub's linger timer goes with it.
      deps.jobEvents.close();
      redis.disconnect();
    },
  };
}

function clientOf<C>(service: string, methods: Fake<C> = {}): PromiseClient<C> {
  return new Proxy(methods as PromiseClient<C>, {
    get(target, property) {
      if (property === "close") return () => undefined;
      if (property === "then") return undefined;
      const method = (target as Record<PropertyKey, unknown>)[property];
      return method ?? (async () => Promise.reject(new Error(`${service}.${String(property)} is not faked in this test`)));
    },
  });
}

/** A well-formed API key (`rb_` and 43 base64url characters), different each time. */
export const newApiKey = (): string => `rb_${randomBytes(32).toString("base64url")}`;

/** The auth context the auth service answers for a credential. */
export function authContextOf(overrides: Partial<auth.AuthContext> = {}): auth.AuthContext {
  return { userId: "usr_1", orgId: `org_${randomBytes(6).toString("hex")}`, plan: "free", role: "owner", credential: "api_key", apiKeyId: `key_${randomBytes(6).toString("hex")}`, ...overrides } as auth.AuthContext;
}

/** The parsed JSON body of an injected response. */
export const bodyOf = (response: LightMyRequestResponse): unknown => JSON.parse(response.body);
