import { spawn, type ChildProcess } from "node:child_process";
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { resolve } from "node:path";
import type { AddressPolicy } from "@renderbus/address-guard";
import { Bus, STREAMS } from "@renderbus/bus";
import { parseConfig } from "@renderbus/config";
import { auth, webhooks } from "@renderbus/contracts";
import { AppError } from "@renderbus/errors";
import { newId } from "@renderbus/ids";
import {
  allowedCallerCredentials,
  createRpcClient,
  createRpcServer,
  devServiceIdentity,
  devServiceTokenKeys,
  productionTestCallerKeys,
  productionTestServiceTokenKeys,
  type AsyncService,
  type PromiseClient,
  type RpcServer,
} from "@renderbus/rpc";
import { createLogger } from "@renderbus/telemetry";
import { defaultServiceRuntime, serviceCommand } from "@renderbus/testing";
import { configSchema, type DispatcherConfig } from "../config.js";
import { startDispatcherService, type DispatcherService } from "../service.js";

const repoRoot = resolve(import.meta.dirname, "..", "..", "..", "..");

/**
 * The dispatcher as a process of its own, with `env` over this process's environment: from its bundle when the test
 * run built them (as it ships, and without compiling the service's TypeScript again at each start), else from source.
 */
export function spawnDispatcher(env: Record<string, string>): ChildProcess {
  const { command, args } = serviceCommand(repoRoot, "webhook-dispatcher", defaultServiceRuntime());
  return spawn(command, args, { cwd: repoRoot, env: { ...process.env, ...env }, stdio: ["ignore", "ignore", "inherit"] });
}

/**
 * Plays the auth service's `GetWebhookTarget` for tests: a real gRPC server whose targets the test sets.
 * (The auth service itself is outside the dispatcher; every other Auth method answers INTERNAL_ERROR.)
 */
export async function startFakeAuth(): Promise<{ address: string; setTarget(target: auth.WebhookTarget): void; lookups: () => number; stop(): Promise<void> }> {
  const targets = new Map<string, auth.WebhookTarget>();
  let lookups = 0;
  // Accepts the dispatcher's tokens of both modes: the development keys and those of testConfig's production mode.
  const server: RpcServer = createRpcServer(devServiceIdentity("auth", `${devServiceTokenKeys()},${productionTestCallerKeys()}`));
  const unsupported = async (): Promise<never> => {
    throw new AppError("INTERNAL_ERROR", "not part of the fake");
  };
  const implementation: AsyncService<auth.AuthServer> = {
    resolveApiKey: unsupported,
    resolveSession: unsupported,
    resolveAccessToken: unsupported,
    createApiKey: unsupported,
    listApiKeys: unsupported,
    revokeApiKey: unsupported,
    getOrg: unsupported,
    updateOrgWebhook: unsupported,
    getWebhookTarget: async ({ orgId }) => {
      lookups += 1;
      return targets.get(orgId) ?? { orgId, plan: "free" };
    },
  };
  server.add(auth.AuthService, implementation);
  const port = await server.listen(0);
  return {
    address: `127.0.0.1:${port}`,
    setTarget: (target) => targets.set(target.orgId, target),
    lookups: () => lookups,
    stop: () => server.shutdown(500),
  };
}

/** One request as a receiver saw it: the raw bytes, untouched. */
export interface ReceivedRequest {
  headers: IncomingMessage["headers"];
  rawBody: Buffer;
  receivedAt: number;
  json: any;
}

export type ReceiverBehaviour = (request: ReceivedRequest, response: ServerResponse) => void;

/** A local HTTP receiver recording every request; `behave` decides the answer (200 by default). */
export async function startReceiver(behave: ReceiverBehaviour = (_request, response) => response.writeHead(200).end("ok")) {
  const received: ReceivedRequest[] = [];
  const waiters: (() => void)[] = [];
  let open = 0;
  const server: Server = createServer((request, response) => {
    open += 1;
    // Answered, or dropped by the sender (its timeout aborts the request).
    response.on("close", () => (open -= 1));
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const rawBody = Buffer.concat(chunks);
      const entry: ReceivedRequest = { headers: request.headers, rawBody, receivedAt: Date.now(), json: JSON.parse(rawBody.toString("utf8") || "null") };
      received.push(entry);
      for (const wake of waiters.splice(0)) wake();
      behave(entry, response);
    });
  });
  const port = await new Promise<number>((resolve) => server.listen(0, "127.0.0.1", () => resolve((server.address() as { port: number }).port)));
  return {
    url: `http://127.0.0.1:${port}/hooks`,
    port,
    received,
    /** Requests still open: neither answered nor given up by the sender. */
    open: () => open,
    /** Resolves once `count` requests have arrived (or rejects after `timeoutMs`). */
    async waitFor(count: number, timeoutMs = 15_000): Promise<ReceivedRequest[]> {
      const deadline = Date.now() + timeoutMs;
      while (received.length < count) {
        if (Date.now() > deadline) throw new Error(`receiver got ${received.length} of ${count} requests`);
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, 100);
          waiters.push(() => {
            clearTimeout(timer);
            resolve();
          });
        });
      }
      return received;
    },
    stop: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/** Dispatcher config for tests: the given infra, free ports, quiet logs, overrides on top. */
export function testConfig(base: { databaseUrl: string; natsUrl: string; namespace: string; authAddress: string }, overrides: Record<string, string> = {}): DispatcherConfig {
  return parseConfig(configSchema, {
    MODE: "test",
    LOG_LEVEL: "silent",
    DATABASE_URL: base.databaseUrl,
    NATS_URL: base.natsUrl,
    NATS_NAMESPACE: base.namespace,
    AUTH_GRPC_ADDRESS: base.authAddress,
    WEBHOOKS_GRPC_PORT: "0",
    DISPATCHER_POLL_INTERVAL_MS: "200",
    // Receivers of tests are on 127.0.0.1; a production-mode dispatcher keeps the SSRF guard on. Production refuses
    // plaintext gRPC: on loopback, a test states what a mesh would (RPC_TRANSPORT).
    ...(overrides.MODE === "production"
      ? { SERVICE_TOKEN_KEYS: productionTestServiceTokenKeys("webhook-dispatcher"), SECRETS_ENCRYPTION_KEYS: `test:${Buffer.alloc(32, 7).toString("base64")}`, RPC_TRANSPORT: "mesh" }
      : { ALLOW_PRIVATE_ADDRESSES: "true" }),
    ...overrides,
  });
}

export async function startTestDispatcher(config: DispatcherConfig, options: { addressPolicy?: AddressPolicy } = {}): Promise<DispatcherService> {
  return startDispatcherService(config, { ...options, logger: createLogger({ service: "webhook-dispatcher", level: process.env.TEST_LOG_LEVEL ?? "silent" }) });
}

/** Publishes job events the way the jobs service's relay does (msg id = event id, standard headers). */
export async function connectPublisher(natsUrl: string, namespace: string) {
  const bus = await Bus.connect({ url: natsUrl, name: "test-publisher", namespace });
  await bus.ensureStreams([STREAMS.jobEvents, STREAMS.webhookEvents]);
  return {
    bus,
    async publish<T extends { orgId: string }>(event: string, body: T, eventId: string = newId("evt")): Promise<string> {
      await bus.publish(`jobs.events.${event}`, body, { msgId: eventId, headers: { "Rb-Event-Type": event, "Rb-Org-Id": body.orgId } });
      return eventId;
    },
    close: () => bus.close(),
  };
}

/** A client of a test dispatcher, calling as the gateway; `production` for one started in production mode. */
export function webhooksClient(port: number, { production = false } = {}): PromiseClient<webhooks.WebhooksClient> {
  return createRpcClient(webhooks.WebhooksClient, `127.0.0.1:${port}`, allowedCallerCredentials(production ? productionTestCallerKeys() : devServiceTokenKeys()));
}

/** A completed-job event body as the jobs service publishes it. */
export function jobCompletedEvent(orgId: string, jobId: string = newId("job"), batchId?: string) {
  return {
    jobId,
    orgId,
    ...(batchId ? { batchId } : {}),
    result: { url: `https://files.example/${jobId}.mp4`, metadata: { durationMs: 127000, width: 1920, height: 1080, fileSize: 1234567 }, outputKey: `${jobId}.mp4`, contentType: "video/mp4" },
    cost: { credits: 26, breakdown: "2m7s video @1080p" },
    timing: { createdAt: 1_700_000_000_000, dispatchedAt: 1_700_000_000_500, startedAt: 1_700_000_001_000, completedAt: 1_700_000_128_000 },
  };
}

export const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** Polls `check` until it returns a value that is not undefined/false. */
export async function eventually<T>(check: () => Promise<T | undefined | false>, timeoutMs = 15_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await check();
    if (value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await sleep(50);
  }
}
