import { spawn, type ChildProcess } from "node:child_process";
import { request as httpRequest } from "node:http";
import { connect, createServer } from "node:net";
import { isDeepStrictEqual } from "node:util";
import { Redis } from "ioredis";
import pg from "pg";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, defaultServiceRuntime, serviceCommand, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { admin, api, createOrg, repoRoot, signUp, waitFor } from "./helpers.js";

const UNAUTHORIZED_BODY = { error: { code: "UNAUTHORIZED", message: "Authentication is invalid or expired" } };

interface SseEvent {
  event: string;
  data: unknown;
}

/** An SSE response as a client sees it: the events so far, and when (and how) the server ended it. */
interface SseClient {
  status: number;
  events: SseEvent[];
  /** Resolves with the time the response ended; `complete` says whether the server ended it cleanly. */
  ended: Promise<number>;
  complete: () => boolean;
  /** The JSON body of a non-200 answer. */
  body: () => Promise<unknown>;
  close: () => void;
}

/** Every stream a test opened; closed after each test so a failing one leaves nothing open for the next. */
const opened: SseClient[] = [];

function openStream(url: string, headers: Record<string, string>): Promise<SseClient> {
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { headers: { accept: "text/event-stream", ...headers } }, (response) => {
      const events: SseEvent[] = [];
      let buffer = "";
      let text = "";
      let complete = false;
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        text += chunk;
        buffer += chunk;
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const block = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = /^event: (.*)$/m.exec(block)?.[1];
          const data = /^data: (.*)$/m.exec(block)?.[1];
          if (event !== undefined && data !== undefined) events.push({ event, data: JSON.parse(data) });
        }
      });
      response.on("end", () => (complete = true));
      const ended = new Promise<number>((done) => response.once("close", () => done(Date.now())));
      response.on("error", () => undefined);
      const client: SseClient = {
        status: response.statusCode ?? 0,
        events,
        ended,
        complete: () => complete,
        body: async () => {
          await ended;
          return JSON.parse(text);
        },
        close: () => request.destroy(),
      };
      opened.push(client);
      resolve(client);
    });
    request.on("error", reject);
    request.end();
  });
}

function getFreePort(): Promise<number> {
  return new Promise((done) => {
    const server = createServer().listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => done(port));
    });
  });
}

const bearer = (key: string) => ({ authorization: `Bearer ${key}` });
const sleep = (ms: number) => new Promise((done) => setTimeout(done, ms));

async function waitForEvent(client: SseClient, event: string, timeoutMs = 10_000): Promise<SseEvent> {
  return waitFor(() => client.events.find((candidate) => candidate.event === event), { timeoutMs, intervalMs: 20, what: `SSE event ${event}` });
}

/** The job's first event: its status when the stream opened, never a final one as no worker takes the job. */
async function waitForFirstEvent(client: SseClient): Promise<SseEvent> {
  const first = await waitFor(() => client.events[0], { timeoutMs: 10_000, intervalMs: 20, what: "the job's first SSE event" });
  expect(["completed", "failed", "cancelled", "error"]).not.toContain(first.event);
  return first;
}

/** Whichever comes first: the stream's end (its time) or `ms` passing (undefined). */
async function endedWithin(client: SseClient, ms: number) {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([client.ended, new Promise<undefined>((done) => (timer = setTimeout(() => done(undefined), ms)))]);
  } finally {
    clearTimeout(timer);
  }
}

/** The gateway's `/metrics` values this file watches (what open streams hold, and the process's live timers). */
async function streamGauges(metricsPort: number) {
  // Served on GATEWAY_METRICS_PORT, off the public listener.
  const text = await (await fetch(`http://127.0.0.1:${metricsPort}/metrics`)).text();
  const value = (pattern: RegExp) => {
    const match = pattern.exec(text);
    if (!match) throw new Error(`metric ${pattern} missing from /metrics`);
    return Number(match[1]);
  };
  return {
    streams: value(/^gateway_sse_streams\{[^}]*kind="job"[^}]*\} (\S+)$/m) + value(/^gateway_sse_streams\{[^}]*kind="webhook"[^}]*\} (\S+)$/m),
    held: value(/^gateway_sse_held_resources(?:\{[^}]*\})? (\S+)$/m),
    jobWatchers: value(/^gateway_sse_job_watchers(?:\{[^}]*\})? (\S+)$/m),
    natsSubscriptions: value(/^gateway_nats_subscriptions(?:\{[^}]*\})? (\S+)$/m),
    timers: value(/^nodejs_active_resources\{[^}]*type="Timeout"[^}]*\} (\S+)$/m),
  };
}

/**
 * Opens a stream on a raw socket and destroys the socket `dropAfterMs` after sending the request: a client that
 * leaves at some point of the stream's set-up (before the handler, during authentication, during getJob, after).
 */
function connectAndDrop(gatewayUrl: string, path: string, key: string, dropAfterMs: number): Promise<void> {
  const { hostname, port } = new URL(gatewayUrl);
  return new Promise((done) => {
    const socket = connect(Number(port), hostname, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${key}\r\n\r\n`);
      setTimeout(() => socket.destroy(), dropAfterMs);
    });
    socket.on("error", () => undefined);
    socket.on("close", () => done());
  });
}

/** Milliseconds from sending a stream request to the first byte of its answer (the set-up a client can leave during). */
function timeToFirstByte(gatewayUrl: string, path: string, key: string): Promise<number> {
  const { hostname, port } = new URL(gatewayUrl);
  return new Promise((done, fail) => {
    const started = performance.now();
    const socket = connect(Number(port), hostname, () => {
      socket.write(`GET ${path} HTTP/1.1\r\nHost: ${hostname}:${port}\r\nAccept: text/event-stream\r\nAuthorization: Bearer ${key}\r\n\r\n`);
    });
    socket.once("data", () => {
      done(performance.now() - started);
      socket.destroy();
    });
    socket.on("error", fail);
  });
}

describe("SSE streams end with their credential, their lifetime and their client, and are capped per org", () => {
  let system: RunningSystem;
  let metricsPort: number;
  let database: pg.Client;
  let redis: Redis;
  /** A second gateway replica on the same services and Redis, with a fast recheck and a short lifetime. */
  let fastGatewayUrl: string;
  let fastGateway: ChildProcess;
  const FAST_RECHECK_MS = 500;
  const FAST_LIFETIME_MS = 5_000;

  beforeAll(async () => {
    const infra = testInfra();
    const databaseUrl = await createTestDatabase("sse");
    metricsPort = await getFreePort();
    system = await startSystem({
      repoRoot,
      databaseUrl,
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("sse"),
      env: {
        MODE: "test",
        PLANS_JSON: JSON.stringify({ free: { requestsPerMinute: 100_000 }, starter: { requestsPerMinute: 100_000 } }),
        // The first gateway rechecks once a minute: a stream it ends within a second was ended by the event.
        SSE_RECHECK_MS: "60000",
        // Every request of this file comes from 127.0.0.1.
        IP_REQUESTS_PER_MINUTE: "100000",
        GATEWAY_METRICS_PORT: String(metricsPort),
      },
    });
    // Without a worker, jobs stay queued, so their streams stay open.
    await system.kill("worker");

    const port = await getFreePort();
    const { command, args } = serviceCommand(repoRoot, "gateway", defaultServiceRuntime());
    fastGatewayUrl = `http://127.0.0.1:${port}`;
    fastGateway = spawn(command, args, {
      cwd: repoRoot,
      env: { ...process.env, ...system.env, GATEWAY_PORT: String(port), GATEWAY_METRICS_PORT: String(await getFreePort()), SSE_RECHECK_MS: String(FAST_RECHECK_MS), SSE_MAX_LIFETIME_MS: String(FAST_LIFETIME_MS) },
      stdio: "ignore",
    });
    await waitFor(async () => (await fetch(`${fastGatewayUrl}/readyz`).catch(() => undefined))?.ok, { timeoutMs: 60_000, what: "second gateway ready" });

    database = new pg.Client({ connectionString: databaseUrl });
    await database.connect();
    redis = new Redis(infra.redisUrl);
  }, 180_000);

  afterEach(() => {
    for (const stream of opened.splice(0)) stream.close();
  });

  afterAll(async () => {
    fastGateway?.kill("SIGTERM");
    await database?.end();
    redis?.disconnect();
    await system?.stop();
  });

  /** A starter org, plus a second key of it (the one the streams use and the test revokes). */
  async function orgWithStreamKey() {
    const { orgId, key: adminKey } = await createOrg(system.env, "starter", "Streams");
    const call = api(system.gatewayUrl, adminKey);
    const created = await call("POST", "/api-keys", { name: "listener" });
    expect(created.status).toBe(201);
    const job = await call("POST", "/jobs", { type: "qr.generate", params: { content: "stays queued" } });
    expect(job.status).toBe(201);
    return { orgId, call, keyId: created.body.data.id as string, key: created.body.data.key as string, jobId: job.body.data.id as string };
  }

  it("ends open /webhooks/events/stream and /jobs/{id}/events at once when their API key is revoked through the API", async () => {
    const { call, keyId, key, jobId } = await orgWithStreamKey();
    const webhookStream = await openStream(`${system.gatewayUrl}/webhooks/events/stream`, bearer(key));
    const jobStream = await openStream(`${system.gatewayUrl}/jobs/${jobId}/events`, bearer(key));
    // The same key's streams on the other replica end too (the revocation reaches every gateway).
    const otherReplicaStream = await openStream(`${fastGatewayUrl}/webhooks/events/stream`, bearer(key));
    expect([webhookStream.status, jobStream.status, otherReplicaStream.status]).toEqual([200, 200, 200]);
    await waitForEvent(webhookStream, "ready");
    await waitForFirstEvent(jobStream);
    await waitForEvent(otherReplicaStream, "ready");

    expect((await call("DELETE", `/api-keys/${keyId}`)).status).toBe(200);
    const revokedAt = Date.now();
    // This gateway rechecks once a minute: ending within two seconds is the revocation event's doing.
    for (const stream of [webhookStream, jobStream, otherReplicaStream]) {
      const endedAt = await endedWithin(stream, 2_000);
      expect(endedAt, "stream still open 2 s after its key was revoked").toBeDefined();
      expect(endedAt! - revokedAt).toBeLessThan(2_000);
      expect(stream.complete()).toBe(true);
      expect(stream.events.at(-1)).toEqual({ event: "error", data: UNAUTHORIZED_BODY });
    }
    const again = await openStream(`${system.gatewayUrl}/webhooks/events/stream`, bearer(key));
    expect(again.status).toBe(401);
    expect(await again.body()).toEqual(UNAUTHORIZED_BODY);
  });

  it("ends a stream within SSE_RECHECK_MS when no revocation event arrives (key revoked behind the gateway's back)", async () => {
    const { keyId, key, jobId } = await orgWithStreamKey();
    const webhookStream = await openStream(`${fastGatewayUrl}/webhooks/events/stream`, bearer(key));
    const jobStream = await openStream(`${fastGatewayUrl}/jobs/${jobId}/events`, bearer(key));
    await waitForEvent(webhookStream, "ready");
    await waitForFirstEvent(jobStream);
    // Straight in the database: no outbox event, no gateway notification (a missed message, SECURITY-AUDIT 14).
    await database.query("update auth.api_keys set revoked_at = $1 where id = $2", [Date.now(), keyId]);
    const revokedAt = Date.now();
    for (const stream of [webhookStream, jobStream]) {
      const endedAt = await endedWithin(stream, FAST_RECHECK_MS * 6);
      expect(endedAt, "stream still open after several rechecks").toBeDefined();
      expect(stream.events.at(-1)).toEqual({ event: "error", data: UNAUTHORIZED_BODY });
      expect(endedAt! - revokedAt).toBeLessThan(FAST_RECHECK_MS * 6);
    }
  });

  it("ends a dashboard (session) job stream within SSE_RECHECK_MS of signing out", async () => {
    // Cookies are issued and writes accepted for the deployment's origin (the first gateway's PUBLIC_URL).
    const origin = system.gatewayUrl;
    const { cookie, me: meOf } = await signUp(origin, "Sam");
    // The job comes in through a key of the same org: the stream is what the cookie is used for here.
    const me = (await (await meOf()).json()) as { data: { orgId: string } };
    const created = JSON.parse(await admin(system.env, "key:create", "--org", me.data.orgId, "--name", "jobs", "--json")) as { apiKey: string };
    const job = await api(origin, created.apiKey)("POST", "/jobs", { type: "qr.generate", params: { content: "dashboard" } });
    expect(job.status).toBe(201);
    const jobId = job.body.data.id as string;
    const stream = await openStream(`${fastGatewayUrl}/jobs/${jobId}/events`, { cookie });
    expect(stream.status).toBe(200);
    await waitForFirstEvent(stream);

    const signOut = await fetch(`${origin}/auth/sign-out`, { method: "POST", headers: { cookie, origin, "content-type": "application/json" }, body: "{}" });
    expect(signOut.status).toBe(200);
    const signedOutAt = Date.now();
    const endedAt = await endedWithin(stream, FAST_RECHECK_MS * 6);
    expect(endedAt, "stream still open after several rechecks").toBeDefined();
    expect(endedAt! - signedOutAt).toBeLessThan(FAST_RECHECK_MS * 6);
    expect(stream.events.at(-1)).toEqual({ event: "error", data: UNAUTHORIZED_BODY });
  });

  it("ends a webhook stream at once when the org's plan loses webhooks", async () => {
    const { orgId, key } = await orgWithStreamKey();
    const stream = await openStream(`${system.gatewayUrl}/webhooks/events/stream`, bearer(key));
    await waitForEvent(stream, "ready");
    await admin(system.env, "org:set-plan", "--org", orgId, "--plan", "free");
    const endedAt = await endedWithin(stream, 10_000);
    expect(endedAt, "stream still open after the downgrade").toBeDefined();
    expect(stream.events.at(-1)).toMatchObject({ event: "error", data: { error: { code: "PLAN_LIMIT" } } });
  });

  it("closes a stream after SSE_MAX_LIFETIME_MS even though its credential stays valid", async () => {
    const { key } = await orgWithStreamKey();
    const stream = await openStream(`${fastGatewayUrl}/webhooks/events/stream`, bearer(key));
    const openedAt = Date.now();
    await waitForEvent(stream, "ready");
    const endedAt = await endedWithin(stream, FAST_LIFETIME_MS + 3_000);
    expect(endedAt, "stream outlived SSE_MAX_LIFETIME_MS").toBeDefined();
    expect(endedAt! - openedAt).toBeGreaterThanOrEqual(FAST_LIFETIME_MS - 100);
    expect(stream.complete()).toBe(true);
    expect(stream.events.map((event) => event.event)).toEqual(["ready"]);
  });

  it("answers an org's 21st open stream (job and webhook streams, across replicas) with 429 RATE_LIMITED", async () => {
    const { key, jobId } = await orgWithStreamKey();
    const open: SseClient[] = [];
    for (let index = 0; index < 10; index += 1) {
      open.push(await openStream(`${system.gatewayUrl}/webhooks/events/stream`, bearer(key)));
      open.push(await openStream(`${fastGatewayUrl}/jobs/${jobId}/events`, bearer(key)));
    }
    expect(open.map((stream) => stream.status)).toEqual(Array(20).fill(200));

    for (const url of [`${system.gatewayUrl}/jobs/${jobId}/events`, `${fastGatewayUrl}/webhooks/events/stream`]) {
      const refused = await openStream(url, bearer(key));
      expect(refused.status).toBe(429);
      expect(await refused.body()).toMatchObject({ error: { code: "RATE_LIMITED", message: expect.stringContaining("event streams") } });
    }
    // A stream that ends gives its slot back.
    open.shift()!.close();
    const reopened = await waitFor(
      async () => {
        const attempt = await openStream(`${system.gatewayUrl}/webhooks/events/stream`, bearer(key));
        if (attempt.status === 200) return attempt;
        attempt.close();
        return undefined;
      },
      { timeoutMs: 5_000, what: "a slot freed by a closed stream" },
    );
    open.push(reopened);
    for (const stream of open) stream.close();
  });

  it("leaves no stream, subscription, watcher, timer or org slot behind after 200 clients drop at random points of set-up", async () => {
    const { orgId, key, jobId } = await orgWithStreamKey();
    const gateway = system.gatewayUrl;
    const paths = ["/webhooks/events/stream", `/jobs/${jobId}/events`];
    await waitFor(async () => ((await streamGauges(metricsPort)).streams === 0 ? true : undefined), { what: "no open streams before" });
    // The job event hub stays subscribed for JOB_EVENTS_LINGER_MS after its last watcher: one stream held across the
    // measurement keeps that subscription in both counts, however long ago an earlier test's watchers left.
    const holder = await openStream(`${gateway}/jobs/${jobId}/events`, bearer(key));
    await waitForFirstEvent(holder);
    const before = await streamGauges(metricsPort);

    // Drops land anywhere from before the request is parsed to after the stream opened.
    const setupMs = Math.max(...(await Promise.all(paths.map((path) => timeToFirstByte(gateway, path, key)))));
    let cycle = 0;
    const dropClients = async () => {
      while (cycle < 200) {
        const index = cycle++;
        await connectAndDrop(gateway, paths[index % 2]!, key, Math.random() * setupMs * 1.5);
      }
    };
    await Promise.all(Array.from({ length: 8 }, dropClients));

    // A dropped client's clean-up finishes after its socket closed (an unsubscribe, a watcher's removal): what is still
    // held after 10 s is a leak, what was released on the way is not.
    // Timers: each leaked stream would keep two intervals and a lifetime timer, while other timers of the process (a
    // pooled connection's, a rate-limit window's) come and go, so a difference under 20 counts as settled.
    const heldOf = ({ timers: _timers, ...held }: typeof before) => held;
    const settled = (now: typeof before) => isDeepStrictEqual(heldOf(now), heldOf(before)) && Math.abs(now.timers - before.timers) < 20;
    let after = await streamGauges(metricsPort);
    for (const deadline = Date.now() + 10_000; !settled(after) && Date.now() < deadline; ) {
      await sleep(100);
      after = await streamGauges(metricsPort);
    }
    expect(heldOf(after), `held before the drops: ${JSON.stringify(before)}`).toEqual(heldOf(before));
    expect(Math.abs(after.timers - before.timers), `timers before the drops: ${before.timers}`).toBeLessThan(20);
    holder.close();
    await waitFor(async () => ((await redis.zcard(`rb:sse:${orgId}`)) === 0 ? true : undefined), { timeoutMs: 5_000, what: "org slots released" });

    // And the org still has all 20 of its slots.
    const open: SseClient[] = [];
    for (let index = 0; index < 20; index += 1) open.push(await openStream(`${gateway}${paths[index % 2]}`, bearer(key)));
    expect(open.map((stream) => stream.status)).toEqual(Array(20).fill(200));
    for (const stream of open) stream.close();
  });
});
