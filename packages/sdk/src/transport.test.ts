import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { RenderbusClient } from "./client.js";
import { RenderbusConnectionError, RenderbusError } from "./errors.js";
import { parseRetryAfter, retryDelayMs } from "./transport.js";

interface Seen {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
}

/** A local HTTP server answering each request with the next scripted response. */
async function scriptedServer(responses: Array<{ status: number; body?: unknown; headers?: Record<string, string> }>) {
  const seen: Seen[] = [];
  const server: Server = createServer((request, response) => {
    let body = "";
    request.on("data", (chunk) => (body += chunk));
    request.on("end", () => {
      seen.push({ method: request.method!, url: request.url!, headers: request.headers, body });
      const next = responses[Math.min(seen.length - 1, responses.length - 1)]!;
      response.writeHead(next.status, { "content-type": "application/json", "x-request-id": `req_${seen.length}`, ...next.headers });
      response.end(next.body === undefined ? "" : JSON.stringify(next.body));
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  servers.push(server);
  return { url, seen };
}

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

const job = { id: "job_1", status: "waiting" };
const rateLimited = { status: 429, body: { error: { code: "RATE_LIMITED", message: "Too many requests" } }, headers: { "retry-after": "0" } };
const fast = { baseDelayMs: 1, maxDelayMs: 5 };

describe("retries", () => {
  it("retries a 429 and sends the same generated Idempotency-Key on every attempt of a submission", async () => {
    const { url, seen } = await scriptedServer([rateLimited, rateLimited, { status: 201, body: { data: job } }]);
    const client = new RenderbusClient({ apiKey: "rb_test", baseUrl: url, retry: fast });
    await expect(client.jobs.submit({ type: "qr.generate", params: { content: "x" } })).resolves.toEqual(job);
    expect(seen).toHaveLength(3);
    const keys = seen.map((request) => request.headers["idempotency-key"]);
    expect(keys[0]).toMatch(/^[0-9a-f-]{36}$/);
    expect(new Set(keys).size).toBe(1);
    expect(seen.every((request) => request.headers.authorization === "Bearer rb_test")).toBe(true);
    expect(JSON.parse(seen[0]!.body)).toEqual({ type: "qr.generate", params: { content: "x" } });
  });

  it("keeps the caller's Idempotency-Key across retries of a 503", async () => {
    const unavailable = { status: 503, body: { error: { code: "SERVICE_UNAVAILABLE", message: "retry later" } } };
    const { url, seen } = await scriptedServer([unavailable, { status: 201, body: { data: { id: "batch_1" } } }]);
    const client = new RenderbusClient({ apiKey: "rb_test", baseUrl: url, retry: fast });
    await client.batches.submit([{ type: "qr.generate" }], { idempotencyKey: "my-key-1" });
    expect(seen.map((request) => request.headers["idempotency-key"])).toEqual(["my-key-1", "my-key-1"]);
  });

  it("gives up after maxRetries with a typed error carrying code, status, message and request id", async () => {
    const { url, seen } = await scriptedServer([rateLimited]);
    const client = new RenderbusClient({ apiKey: "rb_test", baseUrl: url, retry: { ...fast, maxRetries: 2 } });
    const error = await client.jobs.get("job_1").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RenderbusError);
    expect(error).toMatchObject({ code: "RATE_LIMITED", status: 429, message: "Too many requests", requestId: "req_3", retryAfterMs: 0 });
    expect(seen).toHaveLength(3);
  });

  it("does not retry other errors", async () => {
    const { url, seen } = await scriptedServer([{ status: 404, body: { error: { code: "NOT_FOUND", message: "Job not found" } } }]);
    const client = new RenderbusClient({ apiKey: "rb_test", baseUrl: url, retry: fast });
    await expect(client.jobs.get("job_404")).rejects.toMatchObject({ code: "NOT_FOUND", status: 404, requestId: "req_1" });
    expect(seen).toHaveLength(1);
  });

  it("retries network errors and then reports a RenderbusConnectionError", async () => {
    const { url } = await scriptedServer([{ status: 200, body: { data: {} } }]);
    await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
    let attempts = 0;
    const countingFetch: typeof fetch = (input, init) => {
      attempts++;
      return fetch(input, init);
    };
    const client = new RenderbusClient({ apiKey: "rb_test", baseUrl: url, retry: { ...fast, maxRetries: 2 }, fetch: countingFetch });
    await expect(client.jobs.list().firstPage()).rejects.toBeInstanceOf(RenderbusConnectionError);
    expect(attempts).toBe(3);
  });

  it("honours Retry-After in seconds and as an HTTP date, capped by maxDelayMs", () => {
    expect(parseRetryAfter("7")).toBe(7000);
    expect(parseRetryAfter(new Date(10_000).toUTCString(), 4_000)).toBe(6000);
    expect(parseRetryAfter(null)).toBeNull();
    expect(retryDelayMs(0, 7000)).toBe(7000);
    expect(retryDelayMs(0, 90_000, { maxDelayMs: 30_000 })).toBe(30_000);
    for (let retry = 0; retry < 5; retry++) {
      const delay = retryDelayMs(retry, null, { baseDelayMs: 100, maxDelayMs: 1000 });
      expect(delay).toBeGreaterThanOrEqual(0);
      expect(delay).toBeLessThanOrEqual(Math.min(1000, 100 * 2 ** retry));
    }
  });
});
