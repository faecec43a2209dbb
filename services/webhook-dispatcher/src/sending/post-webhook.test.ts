import { createServer } from "node:http";
import { createServer as createTlsServer } from "node:https";
import { afterAll, describe, expect, it, vi } from "vitest";
import { startHostileReceiver, type HostileBehaviour, type HostileReceiver } from "./hostile-receivers.fixture.js";
import { CONNECTIONS_PER_HOST, createWebhookAgent, postWebhook, RESPONSE_EXCERPT_BYTES, type WebhookRequest } from "./post-webhook.js";

const TIMEOUT_MS = 800;

/** A self-signed certificate for 127.0.0.1 (valid 100 years; a test-only key that guards nothing): no CA vouches for it. */
const SELF_SIGNED = {
  key: `-----BEGIN PRIVATE KEY-----
MIGHAgEAMBMGByqGSM49AgEGCCqGSM49AwEHBG0wawIBAQQgeJt1wQeToQwjSi/m
X7d8MZouYuG3kZ5vYQGA/1gFwqChRANCAAREcYDG+S4NhFtCJGmyzJvh5gG1cUT5
UNJAKxbMRdbhwCHbaYcVgZ0XcjAV6eq24zWUZo3qF10W2XmVkkKy1AVd
-----END PRIVATE KEY-----`,
  cert: `-----BEGIN CERTIFICATE-----
MIIBkDCCATagAwIBAgIUEztasqvQnXv3DAMzVa5j6b7WdnswCgYIKoZIzj0EAwIw
FDESMBAGA1UEAwwJMTI3LjAuMC4xMCAXDTI2MTEyNDE0NTAyOFoYDzIxMjYxMDMx
MTQ1MDI4WjAUMRIwEAYDVQQDDAkxMjcuMC4wLjEwWTATBgcqhkjOPQIBBggqhkjO
PQMBBwNCAAREcYDG+S4NhFtCJGmyzJvh5gG1cUT5UNJAKxbMRdbhwCHbaYcVgZ0X
cjAV6eq24zWUZo3qF10W2XmVkkKy1AVdo2QwYjAdBgNVHQ4EFgQUzVPyndpIfmV3
bKDF9NU34+LT3MowHwYDVR0jBBgwFoAUzVPyndpIfmV3bKDF9NU34+LT3MowDwYD
VR0TAQH/BAUwAwEB/zAPBgNVHREECDAGhwR/AAABMAoGCCqGSM49BAMCA0gAMEUC
IQDoYwlOh0gX02D9AslbQai8r8z97fQq9H8ELS4JfH5+WgIgMh4ZYEJxHpP6PAD9
sYOHLxPcCPxrMMUbMIC4jPDppt0=
-----END CERTIFICATE-----`,
};
const agent = createWebhookAgent({ guardAddresses: false, connectTimeoutMs: TIMEOUT_MS });
const receivers: HostileReceiver[] = [];

afterAll(async () => {
  await agent.close();
  await Promise.all(receivers.map((receiver) => receiver.stop()));
});

const webhook = (url: string): WebhookRequest => ({
  url,
  body: JSON.stringify({ type: "job.completed", data: { jobId: "job_1" } }),
  event: "job.completed",
  deliveryId: "dlv_1",
  attempt: 1,
  secret: "whsec_x",
  brand: "Renderbus",
});

async function attemptAgainst(behaviour: HostileBehaviour) {
  const receiver = await startHostileReceiver(behaviour);
  receivers.push(receiver);
  const result = await postWebhook(agent, webhook(receiver.url), { timeoutMs: TIMEOUT_MS });
  return { receiver, result };
}

describe("postWebhook against hostile receivers (real sockets)", () => {
  it.each([
    ["reset", /ECONNRESET|socket hang up/],
    ["garbage", /^HPE_\w+: the receiver did not answer with valid HTTP/],
    ["huge-headers", /^HPE_HEADER_OVERFLOW: the response headers exceed 16384 bytes$/],
    ["never-read", new RegExp(`^timed out after ${TIMEOUT_MS} ms$`)],
    ["silent", new RegExp(`^timed out after ${TIMEOUT_MS} ms$`)],
    ["trickle", new RegExp(`^timed out after ${TIMEOUT_MS} ms$`)],
  ] as const)("records a receiver that does %s as a failed attempt with a clear error, within the timeout", async (behaviour, error) => {
    const { result } = await attemptAgainst(behaviour);
    expect(result.succeeded).toBe(false);
    expect(result.responseStatus).toBeNull();
    expect(result.error).toMatch(error);
    expect(result.responseExcerpt).toBeNull();
    expect(result.latencyMs).toBeLessThan(TIMEOUT_MS + 1000);
  });

  it("reads at most the 4 KB excerpt of a 1 GB body and drops the connection instead of downloading it", async () => {
    const before = process.memoryUsage().rss;
    const { receiver, result } = await attemptAgainst("huge-body");
    expect(result).toMatchObject({ succeeded: true, responseStatus: 200, error: null });
    expect(result.responseExcerpt).toHaveLength(RESPONSE_EXCERPT_BYTES);
    expect(result.latencyMs).toBeLessThan(TIMEOUT_MS);
    // Loopback moves 1 GB in about a second: a reader that kept going would have taken far more than this.
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(receiver.bytesWritten).toBeLessThan(64 * 1024 * 1024);
    expect(process.memoryUsage().rss - before).toBeLessThan(200 * 1024 * 1024);
  });

  it("counts a 2xx whose body is still arriving when the timeout fires: the status came in time, the excerpt is what came", async () => {
    const { result } = await attemptAgainst("slow-body");
    expect(result).toMatchObject({ succeeded: true, responseStatus: 200, error: null });
    expect(result.responseExcerpt).toMatch(/^s+$/);
    expect(result.responseHeaders).toMatchObject({ "content-type": "text/plain" });
    expect(result.latencyMs).toBeLessThan(TIMEOUT_MS + 1000);
  });

  it("keeps a binary body (a NUL byte) storable, U+FFFD in the NUL's place, with the address the answer came from", async () => {
    const { result } = await attemptAgainst("nul-body");
    expect(result).toMatchObject({ succeeded: true, responseStatus: 200, error: null, responseExcerpt: "ok\uFFFD", remoteAddress: "127.0.0.1" });
  });

  it("fails an HTTP 500 whose 1 GB body is cut by a reset, keeping the excerpt that came", async () => {
    const { result } = await attemptAgainst("huge-body-then-reset");
    expect(result).toMatchObject({ succeeded: false, responseStatus: 500, error: "HTTP 500" });
    expect(result.responseExcerpt).toHaveLength(RESPONSE_EXCERPT_BYTES);
  });

  it("survives a receiver that sends a 64 KB body and closes at once (undici#5360 crashed the process there)", async () => {
    const results = [];
    // Several at once and in a row: the crash needed a body paused under backpressure when the FIN arrived.
    for (let round = 0; round < 5; round += 1) {
      const receiver = await startHostileReceiver("body-then-fin");
      receivers.push(receiver);
      results.push(...(await Promise.all(Array.from({ length: 8 }, () => postWebhook(agent, webhook(receiver.url), { timeoutMs: TIMEOUT_MS })))));
    }
    for (const result of results) {
      expect(result).toMatchObject({ succeeded: true, responseStatus: 200 });
      expect(result.responseExcerpt).toBe("b".repeat(RESPONSE_EXCERPT_BYTES));
    }
  });

  it("ends an attempt at once when its abort signal fires (shutdown), closing the connection", async () => {
    const server = createServer(() => undefined); // never answers
    const closed: Promise<void>[] = [];
    server.on("connection", (socket) => closed.push(new Promise((resolve) => socket.on("close", () => resolve()))));
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
      const stop = new AbortController();
      const attempt = postWebhook(agent, webhook(url), { timeoutMs: 60_000, abort: stop.signal });
      await new Promise((resolve) => setTimeout(resolve, 100));
      stop.abort(new Error("shutting down"));
      const result = await attempt;
      expect(result).toMatchObject({ succeeded: false, responseStatus: null, error: "shutting down" });
      expect(result.latencyMs).toBeLessThan(10_000);
      expect(closed).toHaveLength(1);
      await closed[0];
      // An abort that already happened sends nothing at all.
      const late = await postWebhook(agent, webhook(url), { timeoutMs: 60_000, abort: stop.signal });
      expect(late).toMatchObject({ succeeded: false, error: "shutting down" });
      expect(closed).toHaveLength(1);
    } finally {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("starts an attempt's timeout when it gets a connection: attempts queued behind a slow host's answers are not failed unsent", async () => {
    // Every connection to the host is busy for 1 s with the first attempts; the ones queued behind them wait that
    // long for a connection and then get their answer within 1 s, inside their 1.6 s timeout.
    const answerAfterMs = 1000;
    const seen: number[] = [];
    const server = createServer((request, response) => {
      seen.push(Date.now());
      request.resume();
      setTimeout(() => response.end("ok"), answerAfterMs);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const own = createWebhookAgent({ guardAddresses: false, connectTimeoutMs: 5000 });
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
      const results = await Promise.all(Array.from({ length: 2 * CONNECTIONS_PER_HOST }, () => postWebhook(own, webhook(url), { timeoutMs: 1600, connectionWaitMs: 5000 })));
      expect(results.map((result) => result.error)).toEqual(results.map(() => null));
      // The second half was sent only once the first half's connections came free.
      expect(Math.max(...seen) - Math.min(...seen)).toBeGreaterThanOrEqual(answerAfterMs - 100);
      // Latency is the receiver's, from the connection on: not the time queued.
      for (const result of results) expect(result.latencyMs).toBeLessThan(1600);
    } finally {
      await own.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("shares a host's connections between orgs: a free one goes to the org holding the fewest, ahead of slow orgs' queued attempts", async () => {
    // Two orgs whose endpoints on one host answer only when the test says so hold all its connections and queue as
    // many attempts again; a third org's attempts queue after theirs. As connections come free, the third org's are
    // sent first: it holds none, the slow orgs half the host each. (Node's agent alone serves the oldest first.)
    const held: Array<() => void> = [];
    const arrived: string[] = [];
    const server = createServer((request, response) => {
      arrived.push(String(request.headers["x-renderbus-delivery"]));
      request.resume();
      if (String(request.headers["x-renderbus-delivery"]).startsWith("fast")) response.end("ok");
      else held.push(() => response.end("ok"));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const own = createWebhookAgent({ guardAddresses: false, connectTimeoutMs: 5000 });
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
    const attempt = (tenant: string, deliveryId: string) => postWebhook(own, { ...webhook(url), tenant, deliveryId }, { timeoutMs: 60_000 });
    try {
      const perSlowOrg = CONNECTIONS_PER_HOST;
      // Started in turns, so each slow org holds half the host's connections.
      const slow = Array.from({ length: perSlowOrg }, (_, n) => ["slow-a", "slow-b"].map((tenant) => attempt(tenant, `${tenant}-${n}`))).flat();
      await vi.waitFor(() => expect(held).toHaveLength(CONNECTIONS_PER_HOST));
      const fast = Array.from({ length: 4 }, (_, n) => attempt("fast", `fast-${n}`));
      await new Promise((resolve) => setTimeout(resolve, 50));
      // One slow answer frees one connection: the fast org's attempts go through it one after another.
      held.shift()!();
      await vi.waitFor(() => expect(arrived.slice(CONNECTIONS_PER_HOST, CONNECTIONS_PER_HOST + 4)).toEqual(["fast-0", "fast-1", "fast-2", "fast-3"]), { timeout: 5000 });
      expect((await Promise.all(fast)).map((result) => result.error)).toEqual([null, null, null, null]);
      while (held.length > 0 || arrived.length < 2 * perSlowOrg + 4) {
        held.shift()?.();
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      expect((await Promise.all(slow)).every((result) => result.succeeded)).toBe(true);
    } finally {
      await own.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("fails an attempt unsent when no connection to its host comes free within connectionWaitMs, and never sends it later", async () => {
    const held: Array<() => void> = [];
    const server = createServer((request, response) => {
      request.resume();
      held.push(() => response.end("ok")); // answered only when the test says so: every connection stays busy
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const own = createWebhookAgent({ guardAddresses: false, connectTimeoutMs: 5000 });
    try {
      const url = `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`;
      const busy = Array.from({ length: CONNECTIONS_PER_HOST }, () => postWebhook(own, webhook(url), { timeoutMs: 60_000 }));
      const queued = await postWebhook(own, webhook(url), { timeoutMs: 60_000, connectionWaitMs: 500 });
      expect(queued).toMatchObject({ succeeded: false, responseStatus: null });
      expect(queued.error).toBe(`not sent: no connection to this host came free within 500 ms (at most ${CONNECTIONS_PER_HOST} at once per dispatcher process)`);
      expect(held).toHaveLength(CONNECTIONS_PER_HOST);
      // The connections come free: the attempt that gave up is not sent on one of them after all.
      for (const answer of held) answer();
      expect((await Promise.all(busy)).every((result) => result.succeeded)).toBe(true);
      await new Promise((resolve) => setTimeout(resolve, 200));
      expect(held).toHaveLength(CONNECTIONS_PER_HOST);
      // The pool still works: the next attempt is sent and answered.
      const next = postWebhook(own, webhook(url), { timeoutMs: 5000 });
      await vi.waitFor(() => expect(held).toHaveLength(CONNECTIONS_PER_HOST + 1));
      held.at(-1)!();
      expect(await next).toMatchObject({ succeeded: true, responseStatus: 200 });
    } finally {
      await own.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("sends nothing when the attempt is stopped in the same turn as its connection is granted, and gives the connection back", async () => {
    let requests = 0;
    const server = createServer((request, response) => {
      requests += 1;
      request.resume();
      response.end("ok");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const own = createWebhookAgent({ guardAddresses: false, connectTimeoutMs: 5000 });
    const origin = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      // Every connection to the host is held outside the attempt, so it waits for its turn.
      const holders = Array.from({ length: CONNECTIONS_PER_HOST }, () => own.connections.acquire(origin, "other"));
      await Promise.all(holders.map((holder) => holder.granted));
      const shutdown = new AbortController();
      const attempt = postWebhook(own, { ...webhook(`${origin}/hook`), tenant: "org" }, { timeoutMs: 5000, abort: shutdown.signal });
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect(own.connections.heldBy(origin)).toEqual({ other: CONNECTIONS_PER_HOST });
      // The grant and the stop land before the attempt's code runs again: the grant has won the connection already.
      holders[0]!.release();
      shutdown.abort(new Error("shutting down"));
      expect(await attempt).toMatchObject({ succeeded: false, responseStatus: null, error: "shutting down" });
      expect(own.connections.heldBy(origin)).toEqual({ other: CONNECTIONS_PER_HOST - 1 });
      for (const holder of holders.slice(1)) holder.release();
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(requests).toBe(0);
    } finally {
      await own.close();
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("fails a refused connection and an unsupported URL without throwing", async () => {
    const closed = createServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const port = (closed.address() as { port: number }).port;
    await new Promise<void>((resolve) => closed.close(() => resolve()));
    const refused = await postWebhook(agent, webhook(`http://127.0.0.1:${port}/`), { timeoutMs: TIMEOUT_MS });
    expect(refused).toMatchObject({ succeeded: false, responseStatus: null });
    expect(refused.error).toMatch(/^ECONNREFUSED/);
    const ftp = await postWebhook(agent, webhook("ftp://127.0.0.1/"), { timeoutMs: TIMEOUT_MS });
    expect(ftp).toMatchObject({ succeeded: false, error: "INVALID_URL: unsupported protocol ftp:" });
  });

  it("keeps at most 50 response headers, safely named, and the request headers without any signature", async () => {
    const server = createServer((_request, response) => {
      const headers: Array<[string, string]> = [["constructor", "c"], ["__proto__", "p"], ["Set-Cookie", "a=1"], ["set-cookie", "b=2"]];
      // Within the 16 KB response head: 60 headers, the first one longer than a kept value.
      for (let index = 0; index < 60; index += 1) headers.push([`x-h${index}`, "v".repeat(index === 0 ? 1500 : 100)]);
      response.writeHead(200, headers.flat()).end("ok");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const result = await postWebhook(agent, { ...webhook(`http://127.0.0.1:${(server.address() as { port: number }).port}/hook`), previousSecrets: ["old-secret"] }, { timeoutMs: 5000 });
      const headers = result.responseHeaders!;
      expect(Object.keys(headers)).toHaveLength(50);
      expect(Object.getPrototypeOf(headers)).toBe(Object.prototype);
      expect(Object.getOwnPropertyDescriptor(headers, "constructor")?.value).toBe("c");
      expect(Object.getOwnPropertyDescriptor(headers, "__proto__")?.value).toBe("p");
      expect(headers["set-cookie"]).toBe("a=1, b=2");
      expect(headers["x-h0"]).toHaveLength(1000);
      expect(result.requestHeaders).toMatchObject({ "X-Renderbus-Event": "job.completed", "X-Renderbus-Delivery": "dlv_1", "webhook-id": "dlv_1" });
      expect(Object.keys(result.requestHeaders!).map((name) => name.toLowerCase())).not.toContain("x-renderbus-signature");
      expect(Object.keys(result.requestHeaders!).map((name) => name.toLowerCase())).not.toContain("webhook-signature");
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("still delivers to a well-behaved receiver after all of that, with the documented headers and the exact body", async () => {
    let received: { headers: Record<string, unknown>; body: string } | undefined;
    const server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on("data", (chunk: Buffer) => chunks.push(chunk));
      request.on("end", () => {
        received = { headers: request.headers, body: Buffer.concat(chunks).toString("utf8") };
        response.writeHead(204).end();
      });
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const request = webhook(`http://127.0.0.1:${(server.address() as { port: number }).port}/hook`);
      const result = await postWebhook(agent, request, { timeoutMs: TIMEOUT_MS });
      expect(result).toMatchObject({ succeeded: true, responseStatus: 204, error: null, responseExcerpt: "" });
      expect(received!.body).toBe(request.body);
      expect(received!.headers["x-renderbus-event"]).toBe("job.completed");
      expect(received!.headers["content-length"]).toBe(String(Buffer.byteLength(request.body)));
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });

  it("refuses a blocked IP literal with the guard on, before connecting", async () => {
    const guarded = createWebhookAgent({ guardAddresses: true, connectTimeoutMs: TIMEOUT_MS });
    const result = await postWebhook(guarded, webhook("http://169.254.169.254/latest/meta-data/"), { timeoutMs: TIMEOUT_MS });
    await guarded.close();
    expect(result.succeeded).toBe(false);
    expect(result.error).toMatch(/refused to connect/);
  });

  it("speaks TLS to an https receiver and refuses one whose certificate no CA vouches for, without sending the body", async () => {
    let requests = 0;
    const server = createTlsServer(SELF_SIGNED, (_request, response) => {
      requests += 1;
      response.writeHead(200).end("ok");
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const result = await postWebhook(agent, webhook(`https://127.0.0.1:${(server.address() as { port: number }).port}/hook`), { timeoutMs: TIMEOUT_MS });
      expect(result).toMatchObject({ succeeded: false, responseStatus: null });
      expect(result.error).toMatch(/SELF_SIGNED|self.signed/i);
      expect(requests).toBe(0);
    } finally {
      await new Promise<void>((resolve) => server.close(() => resolve()));
    }
  });
});
