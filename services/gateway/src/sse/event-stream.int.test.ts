import { connect, type Socket } from "node:net";
import Fastify, { type FastifyInstance } from "fastify";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Bus } from "@renderbus/bus";
import type { auth } from "@renderbus/contracts";
import { loadPlans } from "@renderbus/plans";
import type { PromiseClient } from "@renderbus/rpc";
import { createLogger, createMetricsRegistry } from "@renderbus/telemetry";
import { testInfra, testNamespace } from "@renderbus/testing";
import { gatewayConfigSchema } from "../config.js";
import type { GatewayDeps } from "../deps.js";
import { CredentialResolver } from "../auth/credential-resolver.js";
import { RateLimiter } from "../auth/rate-limiter.js";
import { JobEventHub } from "./job-event-hub.js";
import { serveEventStream } from "./event-stream.js";
import { OpenStreams } from "./open-streams.js";

const KEY = `rb_${"k".repeat(43)}`;
const DRAIN_TIMEOUT_MS = 500;
const MAX_BUFFERED_BYTES = 256 * 1024;

/**
 * Backpressure over real sockets: a client that stops reading is dropped (its connection cut, everything the stream
 * held released) once the bytes waiting for it pass the cap or once it leaves the buffer undrained for too long.
 * NATS and Redis are real; the auth service's answer is fixed (the credential is not what is under test here).
 */
describe("SSE writes honour backpressure", () => {
  let app: FastifyInstance;
  let streams: OpenStreams;
  let bus: Bus;
  let redis: Redis;
  let port: number;

  beforeAll(async () => {
    const infra = testInfra();
    bus = await Bus.connect({ url: infra.natsUrl, name: "sse-backpressure-test", namespace: testNamespace("ssebp") });
    redis = new Redis(infra.redisUrl);
    const orgId = `org_bp${Date.now()}`;
    const authClient = {
      resolveApiKey: async () => ({ userId: "usr_bp", orgId, plan: "starter", role: "admin", credential: "api_key", apiKeyId: "key_bp" }),
    } as unknown as PromiseClient<auth.AuthClient>;
    const deps = {
      config: gatewayConfigSchema.parse({ REDIS_URL: infra.redisUrl, NATS_URL: infra.natsUrl, PLANS_JSON: JSON.stringify({ starter: { requestsPerMinute: 100_000 } }) }),
      logger: createLogger({ service: "gateway-test", level: "silent" }),
      plans: loadPlans(JSON.stringify({ starter: { requestsPerMinute: 100_000 } })),
      bus,
      redis,
      credentials: new CredentialResolver({ auth: authClient, ttlMs: 0 }),
      rateLimiter: new RateLimiter(redis),
      jobEvents: new JobEventHub(bus),
      metrics: createMetricsRegistry("gateway-test"),
    } as unknown as GatewayDeps;
    streams = new OpenStreams(deps, { drainTimeoutMs: DRAIN_TIMEOUT_MS, maxBufferedBytes: MAX_BUFFERED_BYTES });
    app = Fastify();
    // As fast as the socket takes it: 64 KB events every 2 ms.
    app.get("/firehose", (request, reply) =>
      serveEventStream(streams, request, reply, { kind: "webhook", prepare: () => undefined, start: (stream) => stream.every(2, () => stream.send("chunk", "x".repeat(64 * 1024))) }),
    );
    // One event far larger than the socket's buffers, then nothing: only the drain timeout can end it.
    app.get("/one-large-event", (request, reply) =>
      serveEventStream(streams, request, reply, { kind: "webhook", prepare: () => undefined, start: (stream) => stream.send("chunk", "x".repeat(32 * 1024 * 1024)) }),
    );
    await app.listen({ port: 0, host: "127.0.0.1" });
    port = (app.server.address() as { port: number }).port;
  });

  afterAll(async () => {
    streams?.close();
    await app?.close();
    redis?.disconnect();
    await bus?.close();
  });

  /** A client that sends the request, reads the first bytes, then never reads again. */
  function stalledClient(path: string): Promise<{ socket: Socket; sentAt: number }> {
    return new Promise((resolve, reject) => {
      let sentAt = 0;
      const socket = connect(port, "127.0.0.1", () => {
        sentAt = Date.now();
        socket.write(`GET ${path} HTTP/1.1\r\nHost: x\r\nAuthorization: Bearer ${KEY}\r\n\r\n`);
      });
      socket.once("data", () => {
        socket.pause();
        resolve({ socket, sentAt });
      });
      socket.on("error", () => undefined);
      setTimeout(() => reject(new Error("no answer")), 5_000);
    });
  }

  const openConnections = () => new Promise<number>((done, fail) => app.server.getConnections((error, count) => (error ? fail(error) : done(count))));

  /**
   * When the server has ended the stream and cut the connection (its side: a paused client never reads as far as the
   * close), or undefined if it has not within `ms`.
   */
  async function serverDroppedWithin(ms: number): Promise<number | undefined> {
    for (const deadline = Date.now() + ms; Date.now() < deadline; ) {
      if (streams.count() === 0 && (await openConnections()) === 0) return Date.now();
      await new Promise((done) => setTimeout(done, 20));
    }
    return undefined;
  }

  it("drops a client that stops reading once the bytes waiting for it pass the cap, and releases what its stream held", async () => {
    const { socket } = await stalledClient("/firehose");
    expect(await serverDroppedWithin(10_000), "the server kept writing to a client that stopped reading").toBeDefined();
    expect(streams.held).toBe(0);
    socket.destroy();
  });

  it("drops a client that leaves the buffer undrained for longer than the drain timeout", async () => {
    const { socket, sentAt } = await stalledClient("/one-large-event");
    const droppedAt = await serverDroppedWithin(10_000);
    expect(droppedAt, "a client that never drained kept its stream").toBeDefined();
    // The drain timer starts after the request arrived: a drop sooner would be the cap's, not the timeout's.
    expect(droppedAt! - sentAt).toBeGreaterThanOrEqual(DRAIN_TIMEOUT_MS);
    expect(streams.held).toBe(0);
    socket.destroy();
  });
});
