import { createServer, type Server } from "node:http";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { crc32 } from "node:zlib";
import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ERROR_CODES, isErrorCode } from "@renderbus/errors";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { api, createOrg, makeTestVideo, repoRoot, waitFor } from "../helpers.js";
import { operationsOf, requestsFor, type FuzzRequest } from "./openapi-fuzz.js";

/** Generated requests per run; CI runs the default, a longer local run sets FUZZ_REQUESTS. */
const REQUESTS = Number(process.env.FUZZ_REQUESTS ?? 10_000);
/** Fixed so a failure reproduces; FUZZ_SEED explores other corners. */
const SEED = Number(process.env.FUZZ_SEED ?? 20_261_123);
const CONCURRENCY = 12;

const TERMINAL = ["completed", "failed", "cancelled"];

describe("bad input", () => {
  let system: RunningSystem;

  beforeAll(async () => {
    const infra = testInfra();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("fuzz"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("fuzz"),
      env: {
        MODE: "test",
        // The slow-loris input gives up after this; the default (2 min) would only make the test slow.
        INPUT_FETCH_TIMEOUT_MS: "6000",
        PLANS_JSON: JSON.stringify({ pro: { requestsPerMinute: 10_000_000 } }),
        // Every fuzzed request comes from 127.0.0.1: the per-client budget would answer most of them 429.
        IP_REQUESTS_PER_MINUTE: "10000000",
      },
    });
  }, 180_000);

  afterAll(async () => {
    await system?.stop();
  });

  describe("requests generated from /openapi.json", () => {
    let orgId: string;
    let key: string;
    let call: ReturnType<typeof api>;

    /** What the fuzzed org owns and has configured, read back through the API; lastUsedAt moves with every call. */
    const snapshot = async () => {
      const read = async (path: string) => {
        const response = await call("GET", path);
        expect(response.status, path).toBe(200);
        return response.body;
      };
      const keys = (await read("/api-keys")) as { data: Record<string, unknown>[] };
      return {
        jobs: await read("/jobs?limit=100"),
        balance: await read("/billing/balance"),
        usage: await read("/billing/usage?limit=100"),
        keys: keys.data.map(({ lastUsedAt: _lastUsedAt, ...rest }) => rest),
        org: await read("/orgs/current"),
        deliveries: await read("/webhooks/deliveries?limit=100"),
      };
    };

    beforeAll(async () => {
      ({ orgId, key } = await createOrg(system.env, "pro", "Fuzzed"));
      call = api(system.gatewayUrl, key);
      // Something to protect: a finished job, a second key; no webhook URL, so POST /webhooks/test cannot succeed.
      const job = await call("POST", "/jobs", { type: "qr.generate", params: { content: "before the fuzzer" } });
      expect(job.status).toBe(201);
      expect((await call("POST", "/api-keys", { name: "kept" })).status).toBe(201);
      await waitFor(async () => (TERMINAL.includes((await call("GET", `/jobs/${job.body.data.id}`)).body.data.status) ? true : undefined), { timeoutMs: 90_000, what: "the seed job" });
    }, 120_000);

    it(`answers ${REQUESTS} invalid requests over every operation with documented 4xx errors, no 5xx, and no state change`, async () => {
      const document = (await (await fetch(`${system.gatewayUrl}/openapi.json`)).json()) as Parameters<typeof operationsOf>[0];
      const operations = operationsOf(document);
      expect(operations.length).toBeGreaterThanOrEqual(19);
      const context = {
        validKey: key,
        orgId,
        validBodies: {
          submitJob: { type: "qr.generate", params: { content: "fuzz" } },
          submitBatch: { jobs: [{ type: "qr.generate", params: { content: "fuzz" } }] },
          createApiKey: { name: "fuzz" },
          updateOrgWebhook: { webhookUrl: "http://127.0.0.1:9/fuzz", webhookSecret: "whsec_fuzz_secret" },
          createWebhookEndpoint: { url: "http://127.0.0.1:9/fuzz-endpoint", events: ["*"] },
          updateWebhookEndpoint: { description: "fuzz" },
          rotateWebhookEndpointSecret: {},
          recoverWebhookEndpoint: { since: 0 },
          createUploadLink: { size: 10, filename: "fuzz.bin" },
          uploadMedia: { base64: Buffer.from("fuzz").toString("base64"), filename: "fuzz.bin" },
          // Routes that take no body document a strict empty one.
          cancelJob: {},
          retryWebhookDelivery: {},
          sendTestWebhook: {},
          revokeApiKey: {},
          deleteWebhookEndpoint: {},
        },
      };
      // Spread evenly: pick an operation, then one of the ways to be wrong that it allows.
      const arbitrary = fc.oneof(...operations.map((operation) => requestsFor(operation, context)));
      const requests = fc.sample(arbitrary, { numRuns: REQUESTS, seed: SEED });

      const before = await snapshot();
      const started = Date.now();
      const failures: string[] = [];
      const byKind = new Map<string, number>();
      const byOperation = new Map<string, number>();
      let sent = 0;
      let next = 0;
      const send = async (request: FuzzRequest) => {
        let response: Response;
        let text = "";
        try {
          response = await fetch(`${system.gatewayUrl}${request.path}`, {
            method: request.method,
            headers: request.headers,
            ...(request.body !== undefined ? { body: request.body } : {}),
            signal: AbortSignal.timeout(30_000),
          });
          // An accepted Server-Sent Events stream never ends: its status is the answer.
          if (response.headers.get("content-type")?.startsWith("text/event-stream")) await response.body?.cancel();
          else text = await response.text();
        } catch (error) {
          // The cause (a reset, a closed socket...) says whether the gateway or the connection pool dropped it.
          const cause = (error as Error & { cause?: { code?: string; message?: string } }).cause;
          failures.push(`no answer: ${(error as Error).name}${cause ? ` (${cause.code ?? cause.message})` : ""}\n  ${request.method} ${request.path.slice(0, 300)} [${request.kind}] body ${request.body?.length ?? 0} chars`);
          return;
        }
        sent += 1;
        byKind.set(request.kind, (byKind.get(request.kind) ?? 0) + 1);
        byOperation.set(request.operationId, (byOperation.get(request.operationId) ?? 0) + 1);
        const problem = judge(request, response.status, text);
        if (problem) failures.push(`${problem}\n  ${request.method} ${request.path.slice(0, 300)} [${request.kind}] headers=${JSON.stringify(request.headers).slice(0, 200)} body=${request.body?.slice(0, 300)}\n  -> ${response.status} ${text.slice(0, 300)}`);
      };
      await Promise.all(
        Array.from({ length: CONCURRENCY }, async () => {
          while (next < requests.length) await send(requests[next++]!);
        }),
      );
      const seconds = (Date.now() - started) / 1000;
      console.log(`fuzzer: ${sent} requests in ${seconds.toFixed(1)} s (seed ${SEED}); by kind ${JSON.stringify(Object.fromEntries(byKind))}; by operation ${JSON.stringify(Object.fromEntries(byOperation))}`);

      const problems = new Map<string, number>();
      for (const failure of failures) problems.set(failure.split("\n")[0]!, (problems.get(failure.split("\n")[0]!) ?? 0) + 1);
      if (failures.length > 0) console.log(`fuzzer problems: ${JSON.stringify(Object.fromEntries(problems))}`);
      expect(failures.slice(0, 15)).toEqual([]);
      expect(sent).toBeGreaterThanOrEqual(REQUESTS);
      expect([...byOperation.keys()].sort()).toEqual(operations.map((operation) => operation.operationId).sort());
      expect(await snapshot()).toEqual(before);
    }, 600_000);
  });

  describe("malformed job inputs", () => {
    let inputs: Awaited<ReturnType<typeof startHostileServer>>;
    let call: ReturnType<typeof api>;

    beforeAll(async () => {
      inputs = await startHostileServer();
      const { key } = await createOrg(system.env, "pro", "Hostile inputs");
      call = api(system.gatewayUrl, key);
    }, 60_000);

    afterAll(async () => {
      await inputs?.close();
    });

    const finished = (jobId: string) =>
      waitFor(async () => {
        const job = (await call("GET", `/jobs/${jobId}`)).body.data;
        return TERMINAL.includes(job.status) ? job : undefined;
      }, { timeoutMs: 120_000, intervalMs: 300, what: `job ${jobId} to finish` });

    it("fails each hostile input with INPUT_ERROR or PROVIDER_ERROR, and the worker then still completes a valid job", async () => {
      const cases = [
        { name: "a text file", type: "extract.metadata", path: "/text.mp4", codes: ["INPUT_ERROR"] },
        { name: "a 0-byte file", type: "extract.metadata", path: "/empty.mp4", codes: ["INPUT_ERROR"] },
        { name: "a truncated video", type: "transcode", path: "/truncated.mp4", codes: ["INPUT_ERROR", "PROVIDER_ERROR"] },
        { name: "a PNG claiming 100000x100000", type: "thumbnail", path: "/giant.png", codes: ["INPUT_ERROR", "PROVIDER_ERROR"] },
        { name: "a redirect loop", type: "extract.metadata", path: "/loop", codes: ["INPUT_ERROR"] },
        { name: "a slow-loris server (1 byte/s)", type: "extract.metadata", path: "/slow.mp4", codes: ["INPUT_ERROR"] },
      ];
      const submitted = await Promise.all(cases.map((spec) => call("POST", "/jobs", { type: spec.type, inputs: { source: inputs.url(spec.path) } })));
      for (const response of submitted) expect(response.status, JSON.stringify(response.body)).toBe(201);
      const outcomes: Record<string, unknown> = {};
      for (const [index, spec] of cases.entries()) {
        const job = await finished(submitted[index]!.body.data.id);
        outcomes[spec.name] = job.status === "failed" && spec.codes.includes(job.error.code) ? "failed as expected" : { status: job.status, error: job.error };
        expect(job.cost).toBeNull();
      }
      expect(outcomes).toEqual(Object.fromEntries(cases.map((spec) => [spec.name, "failed as expected"])));

      const valid = await call("POST", "/jobs", { type: "extract.metadata", inputs: { source: inputs.url("/clip.mp4") } });
      expect(valid.status).toBe(201);
      const job = await finished(valid.body.data.id);
      expect(job.status, JSON.stringify(job.error)).toBe("completed");
      // Only the valid job is charged; the hostile ones were released or never reserved.
      await waitFor(async () => {
        const entries = (await call("GET", "/billing/usage?limit=100")).body.data as { kind: string; jobId: string | null }[];
        const captured = entries.filter((entry) => entry.kind === "capture").map((entry) => entry.jobId);
        return captured.length === 1 && captured[0] === job.id ? true : undefined;
      }, { timeoutMs: 60_000, what: "one capture, for the valid job" });
    }, 300_000);
  });
});

/** Why a response to an invalid request is wrong, or undefined when it is right. */
function judge(request: FuzzRequest, status: number, text: string): string | undefined {
  if (status >= 500) return `server error ${status}`;
  if (status >= 200 && status < 300) return request.mayReadOk && request.method === "GET" ? undefined : `accepted an invalid request (${status})`;
  if (status < 400) return `unexpected status ${status}`;
  // A HEAD answer has no body (HTTP): its status must be one the document lists for the operation.
  if (request.method === "HEAD") return request.errorCodes[String(status)] ? (request.expectStatus !== undefined && status !== request.expectStatus ? `expected ${request.expectStatus}` : undefined) : `status ${status} is not documented for ${request.operationId}`;
  let body: { error?: { code?: unknown; message?: unknown } };
  try {
    body = JSON.parse(text);
  } catch {
    return "4xx body is not JSON";
  }
  const code = body?.error?.code;
  if (typeof code !== "string" || !isErrorCode(code)) return `error code ${String(code)} is not a documented code`;
  // Another protocol's status (tus' 412) is right only where the document lists it for the operation with this code.
  if (ERROR_CODES[code] !== status && !request.errorCodes[String(status)]?.includes(code)) return `${code} came with ${status}, docs/concepts.md says ${ERROR_CODES[code]}`;
  if (typeof body.error!.message !== "string" || body.error!.message.length === 0) return "error without a message";
  if (/node_modules|\bat .+:\d+:\d+|select .+ from /i.test(text)) return "error leaks internals";
  if (request.expectStatus !== undefined && status !== request.expectStatus) return `expected ${request.expectStatus}`;
  return undefined;
}

/** Serves inputs a worker must survive: junk, nothing, half a video, a lying PNG, a redirect loop, a trickle. */
async function startHostileServer() {
  const media = await makeTestVideo();
  const clip = readFileSync(join(media, "clip.mp4"));
  // ffmpeg writes the mp4 index (moov) at the end unless told +faststart, so the first 40% is undecodable.
  const truncated = clip.subarray(0, Math.floor(clip.length * 0.4));
  const sockets = new Set<import("node:net").Socket>();
  const timers = new Set<NodeJS.Timeout>();
  const server: Server = createServer((request, response) => {
    const path = new URL(request.url ?? "/", "http://x").pathname;
    switch (path) {
      case "/text.mp4":
        return void response.writeHead(200, { "content-type": "video/mp4" }).end("this is not a video, just some words\n".repeat(50));
      case "/empty.mp4":
        return void response.writeHead(200, { "content-type": "video/mp4", "content-length": "0" }).end();
      case "/truncated.mp4":
        return void response.writeHead(200, { "content-type": "video/mp4" }).end(truncated);
      case "/giant.png":
        return void response.writeHead(200, { "content-type": "image/png" }).end(giantPng(100_000, 100_000));
      case "/loop":
        return void response.writeHead(302, { location: "/loop" }).end();
      case "/clip.mp4":
        return void response.writeHead(200, { "content-type": "video/mp4" }).end(clip);
      case "/slow.mp4": {
        response.writeHead(200, { "content-type": "video/mp4", "content-length": String(clip.length) });
        let offset = 0;
        const timer = setInterval(() => {
          if (response.destroyed || offset >= clip.length) return clearInterval(timer);
          response.write(clip.subarray(offset, offset + 1));
          offset += 1;
        }, 1000);
        timers.add(timer);
        return;
      }
      default:
        return void response.writeHead(404).end();
    }
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const port = (server.address() as { port: number }).port;
  return {
    url: (path: string) => `http://127.0.0.1:${port}${path}`,
    close: () =>
      new Promise<void>((done) => {
        for (const timer of timers) clearInterval(timer);
        for (const socket of sockets) socket.destroy();
        server.close(() => done());
      }),
  };
}

/** A PNG whose header claims `width` x `height` with a few bytes of image data (valid chunk CRCs). */
function giantPng(width: number, height: number): Buffer {
  const chunk = (type: string, data: Buffer) => {
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const crc = Buffer.alloc(4);
    crc.writeUInt32BE(crc32(body));
    return Buffer.concat([length, body, crc]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header.set([8, 6, 0, 0, 0], 8); // 8-bit RGBA, deflate, no interlace
  const signature = Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]);
  return Buffer.concat([signature, chunk("IHDR", header), chunk("IDAT", Buffer.from([0x78, 0x9c, 0x03, 0x00, 0x00, 0x00, 0x00, 0x01])), chunk("IEND", Buffer.alloc(0))]);
}
