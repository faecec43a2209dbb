import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { apiRoutes } from "../../services/gateway/src/routes/index.js";
import { api, createOrg, repoRoot, startReceiver, waitFor } from "../helpers.js";

/** Org A's resources, one of each kind a path id can name. */
interface Resources {
  orgId: string;
  jobId: string;
  batchId: string;
  keyId: string;
  deliveryId: string;
  endpointId: string;
  /** A tus upload half written (UPLOAD_HALF of UPLOAD_SIZE bytes). */
  uploadId: string;
}

/** How org B probes one id-taking operation with org A's id: the REST call and the MCP tool arguments. */
interface Probe {
  path: (a: Resources) => string;
  body?: (a: Resources) => unknown;
  /** Sent as is instead of a JSON body (the tus routes take bytes). */
  rawBody?: string;
  headers?: Record<string, string>;
  tool?: (a: Resources) => Record<string, unknown>;
}

/** A's upload: its declared size and how many bytes A wrote before B probes it. */
const UPLOAD_SIZE = 10;
const UPLOAD_HALF = 5;
/** Headers of a tus request (docs/uploads.md). */
const TUS = { "tus-resumable": "1.0.0" };

/**
 * Every operation of `/openapi.json` whose path takes an id, keyed `METHOD /path`. A new id route that is not here
 * fails the coverage test, so the matrix cannot fall behind the API.
 */
const MATRIX: Record<string, Probe> = {
  "GET /jobs/{jobId}": { path: (a) => `/jobs/${a.jobId}`, tool: (a) => ({ jobId: a.jobId }) },
  "GET /jobs/{jobId}/wait": { path: (a) => `/jobs/${a.jobId}/wait?timeoutSeconds=0`, tool: (a) => ({ jobId: a.jobId, timeoutSeconds: 0 }) },
  "POST /jobs/{jobId}/cancel": { path: (a) => `/jobs/${a.jobId}/cancel`, tool: (a) => ({ jobId: a.jobId }) },
  "GET /batches/{batchId}": { path: (a) => `/batches/${a.batchId}`, tool: (a) => ({ batchId: a.batchId }) },
  "DELETE /api-keys/{keyId}": { path: (a) => `/api-keys/${a.keyId}`, tool: (a) => ({ keyId: a.keyId }) },
  "PATCH /orgs/{orgId}": {
    path: (a) => `/orgs/${a.orgId}`,
    body: () => ({ webhookUrl: "http://127.0.0.1:9/stolen", webhookSecret: "whsec_stolen_by_b" }),
    tool: (a) => ({ orgId: a.orgId, webhookUrl: "http://127.0.0.1:9/stolen", webhookSecret: "whsec_stolen_by_b" }),
  },
  "POST /webhooks/deliveries/{deliveryId}/retry": { path: (a) => `/webhooks/deliveries/${a.deliveryId}/retry`, tool: (a) => ({ deliveryId: a.deliveryId }) },
  "GET /webhooks/endpoints/{endpointId}": { path: (a) => `/webhooks/endpoints/${a.endpointId}`, tool: (a) => ({ endpointId: a.endpointId }) },
  "PATCH /webhooks/endpoints/{endpointId}": {
    path: (a) => `/webhooks/endpoints/${a.endpointId}`,
    body: () => ({ url: "http://127.0.0.1:9/stolen" }),
    tool: (a) => ({ endpointId: a.endpointId, url: "http://127.0.0.1:9/stolen" }),
  },
  "DELETE /webhooks/endpoints/{endpointId}": { path: (a) => `/webhooks/endpoints/${a.endpointId}`, tool: (a) => ({ endpointId: a.endpointId }) },
  "POST /webhooks/endpoints/{endpointId}/rotate-secret": { path: (a) => `/webhooks/endpoints/${a.endpointId}/rotate-secret`, body: () => ({}), tool: (a) => ({ endpointId: a.endpointId }) },
  "POST /webhooks/endpoints/{endpointId}/recover": { path: (a) => `/webhooks/endpoints/${a.endpointId}/recover`, body: () => ({ since: 0 }), tool: (a) => ({ endpointId: a.endpointId, since: 0 }) },
  // Server-Sent Events; no MCP tool (a stream is not a tool call).
  "GET /jobs/{jobId}/events": { path: (a) => `/jobs/${a.jobId}/events` },
  "GET /uploads/{uploadId}": { path: (a) => `/uploads/${a.uploadId}`, tool: (a) => ({ uploadId: a.uploadId }) },
  // tus 1.0 (no MCP tools: a tus client speaks them). A HEAD answer has no body: its status is the whole answer.
  "HEAD /uploads/{uploadId}": { path: (a) => `/uploads/${a.uploadId}`, headers: TUS },
  "PATCH /uploads/{uploadId}": {
    path: (a) => `/uploads/${a.uploadId}`,
    // Exactly the bytes A's upload still lacks, at A's offset: a write that would succeed for A.
    rawBody: "b".repeat(UPLOAD_SIZE - UPLOAD_HALF),
    headers: { ...TUS, "upload-offset": String(UPLOAD_HALF), "content-type": "application/offset+octet-stream" },
  },
  "DELETE /uploads/{uploadId}": { path: (a) => `/uploads/${a.uploadId}`, headers: TUS },
};

/** Id routes authorized by a signed URL (the signature is the credential), not by the caller's org. */
const SIGNED_URL_AUTHORIZED = new Set(["GET /outputs/{key}"]);

/** Id routes whose id names something shared by every org (the job-type catalogue), not a tenant's resource. */
const NOT_TENANT_SCOPED = new Set(["GET /job-types/{type}"]);

const toolNameOf = (operationId: string): string => {
  const route = apiRoutes.find((candidate) => candidate.operationId === operationId);
  if (!route || route.mcpTool === false) throw new Error(`no MCP tool for ${operationId}`);
  return route.mcpTool || operationId.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase();
};

async function connectMcp(gatewayUrl: string, token: string): Promise<Client> {
  const client = new Client({ name: "renderbus-isolation", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", gatewayUrl), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

describe("tenant isolation: org B's credentials on org A's resources", () => {
  let system: RunningSystem;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  let openapi: { paths: Record<string, Record<string, { operationId: string }>> };
  let a: Resources;
  let aKey: string;
  let bKey: string;
  let bMcp: Client;
  let callA: ReturnType<typeof api>;
  let callB: ReturnType<typeof api>;

  beforeAll(async () => {
    const infra = testInfra();
    receiver = await startReceiver(() => 200);
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("isolation"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("isolation"),
      env: { MODE: "test", IP_REQUESTS_PER_MINUTE: "1000000", PLANS_JSON: JSON.stringify({ pro: { requestsPerMinute: 100000 } }) },
    });
    openapi = (await (await fetch(`${system.gatewayUrl}/openapi.json`)).json()) as typeof openapi;

    const orgA = await createOrg(system.env, "pro", "Tenant A");
    const orgB = await createOrg(system.env, "pro", "Tenant B");
    aKey = orgA.key;
    bKey = orgB.key;
    callA = api(system.gatewayUrl, aKey);
    callB = api(system.gatewayUrl, bKey);
    expect((await callA("PATCH", `/orgs/${orgA.orgId}`, { webhookUrl: receiver.url, webhookSecret: "whsec_tenant_a" })).status).toBe(200);

    const job = await callA("POST", "/jobs", { type: "qr.generate", params: { content: "tenant A" } });
    expect(job.status).toBe(201);
    const batch = await callA("POST", "/batches", { jobs: [{ type: "qr.generate", params: { content: "tenant A batch" } }] });
    expect(batch.status).toBe(201);
    const key = await callA("POST", "/api-keys", { name: "tenant A second key" });
    expect(key.status).toBe(201);
    const jobId: string = job.body.data.id;
    await waitFor(async () => ((await callA("GET", `/jobs/${jobId}`)).body.data.status === "completed" ? true : undefined), { timeoutMs: 90_000, what: "A's job to complete" });
    const deliveryId = await waitFor(async () => {
      const page = await callA("GET", `/webhooks/deliveries?jobId=${jobId}&event=job.completed`);
      return page.body.data.find((delivery: { status: string }) => delivery.status === "succeeded")?.id as string | undefined;
    }, { timeoutMs: 90_000, what: "A's job.completed delivery" });
    const endpoint = await callA("POST", "/webhooks/endpoints", { url: "http://127.0.0.1:9/a-endpoint", events: ["job.failed"] });
    expect(endpoint.status).toBe(201);
    const link = await callA("POST", "/upload-links", { size: UPLOAD_SIZE, filename: "a.bin" });
    expect(link.status, JSON.stringify(link.body)).toBe(201);
    const written = await fetch(link.body.data.url, { method: "PATCH", headers: { authorization: `Bearer ${aKey}`, ...link.body.data.headers }, body: "a".repeat(UPLOAD_HALF) });
    expect(written.status, await written.text()).toBe(204);
    a = { orgId: orgA.orgId, jobId, batchId: batch.body.data.id, keyId: key.body.data.id, deliveryId, endpointId: endpoint.body.data.id, uploadId: link.body.data.upload.id };
    bMcp = await connectMcp(system.gatewayUrl, bKey);
  }, 240_000);

  afterAll(async () => {
    await bMcp?.close();
    await system?.stop();
    await receiver?.close();
  });

  const idOperations = () =>
    Object.entries(openapi.paths).flatMap(([path, operations]) =>
      path.includes("{") ? Object.entries(operations).map(([method, operation]) => ({ key: `${method.toUpperCase()} ${path}`, operationId: operation.operationId })) : [],
    );

  it("covers every id-taking operation of /openapi.json (a new one must be added to the matrix)", () => {
    const uncovered = idOperations().filter(({ key }) => !(key in MATRIX) && !NOT_TENANT_SCOPED.has(key) && !SIGNED_URL_AUTHORIZED.has(key));
    expect(uncovered).toEqual([]);
    expect(Object.keys(MATRIX).length).toBeGreaterThanOrEqual(6);
  });

  it("answers 404 NOT_FOUND (never 403 or 200) on every id route over REST, and changes nothing of A's", async () => {
    const results: Record<string, unknown> = {};
    const revealed: Record<string, string> = {};
    for (const { key } of idOperations().filter(({ key }) => key in MATRIX)) {
      const probe = MATRIX[key]!;
      const method = key.split(" ")[0]!;
      const response =
        probe.rawBody !== undefined
          ? await fetch(`${system.gatewayUrl}${probe.path(a)}`, { method, headers: { authorization: `Bearer ${bKey}`, ...probe.headers }, body: probe.rawBody }).then(async (raw) => {
              const text = await raw.text();
              return { status: raw.status, headers: raw.headers, body: text ? JSON.parse(text) : undefined };
            })
          : await callB(method, probe.path(a), probe.body?.(a), probe.headers);
      // A HEAD answer carries no body, so no error code: the status says it all.
      results[key] = method === "HEAD" ? { status: response.status } : { status: response.status, code: response.body?.error?.code };
      for (const header of ["upload-offset", "upload-length", "location"]) {
        const value = response.headers.get(header);
        if (value !== null) revealed[`${key} ${header}`] = value;
      }
    }
    expect(results).toEqual(
      Object.fromEntries(idOperations().filter(({ key }) => key in MATRIX).map(({ key }) => [key, key.startsWith("HEAD ") ? { status: 404 } : { status: 404, code: "NOT_FOUND" }])),
    );
    // Nothing of A's upload leaks through the tus headers either.
    expect(revealed).toEqual({});

    // A's job is still completed (not cancelled), its key still works, its webhook target is unchanged.
    expect((await callA("GET", `/jobs/${a.jobId}`)).body.data.status).toBe("completed");
    const aKeys = (await callA("GET", "/api-keys")).body.data as { id: string; revokedAt: number | null }[];
    expect(aKeys.find((key) => key.id === a.keyId)?.revokedAt).toBeNull();
    expect((await callA("GET", "/orgs/current")).body.data.webhookUrl).toBe(receiver.url);
    expect((await callA("GET", `/webhooks/endpoints/${a.endpointId}`)).body.data).toMatchObject({ url: "http://127.0.0.1:9/a-endpoint", secretSet: true });
    const deliveries = (await callA("GET", `/webhooks/deliveries?jobId=${a.jobId}&event=job.completed`)).body.data as { attempts: number }[];
    expect(deliveries).toHaveLength(1);
    expect(deliveries[0]!.attempts).toBe(1);
    // A's upload is still there, with only A's bytes.
    const upload = await callA("GET", `/uploads/${a.uploadId}`);
    expect(upload.status).toBe(200);
    expect(upload.body.data).toMatchObject({ id: a.uploadId, size: UPLOAD_SIZE, offset: UPLOAD_HALF, complete: false });
    // The owner's tus HEAD answers (so B's 404 is about the tenant, not the route).
    const head = await fetch(`${system.gatewayUrl}/uploads/${a.uploadId}`, { method: "HEAD", headers: { authorization: `Bearer ${aKey}`, ...TUS } });
    expect([head.status, head.headers.get("upload-offset")]).toEqual([200, String(UPLOAD_HALF)]);
  });

  it("does not reveal A's resources through B's list filters (batchId, jobId)", async () => {
    const jobs = await callB("GET", `/jobs?batchId=${a.batchId}`);
    expect(jobs.status === 404 || (jobs.status === 200 && jobs.body.data.length === 0), JSON.stringify(jobs.body)).toBe(true);
    const deliveries = await callB("GET", `/webhooks/deliveries?jobId=${a.jobId}`);
    expect(deliveries.status === 404 || (deliveries.status === 200 && deliveries.body.data.length === 0), JSON.stringify(deliveries.body)).toBe(true);
    expect(JSON.stringify((await callB("GET", "/jobs")).body)).not.toContain(a.jobId);
    expect(JSON.stringify((await callB("GET", "/api-keys")).body)).not.toContain(a.keyId);
    expect(JSON.stringify((await callB("GET", "/billing/usage")).body)).not.toContain(a.jobId);
  });

  it("answers NOT_FOUND tool errors on every id tool over MCP", async () => {
    const results: Record<string, string> = {};
    const withTools = idOperations().filter(({ key }) => MATRIX[key]?.tool !== undefined);
    expect(withTools.length).toBeGreaterThanOrEqual(6);
    for (const { key, operationId } of withTools) {
      const probe = MATRIX[key]!;
      const result = (await bMcp.callTool({ name: toolNameOf(operationId), arguments: probe.tool!(a) })) as CallToolResult;
      results[key] = result.isError ? (result.content[0] as { text: string }).text.split(":")[0]! : "succeeded";
    }
    expect(results).toEqual(Object.fromEntries(withTools.map(({ key }) => [key, "NOT_FOUND"])));
    expect((await callA("GET", `/jobs/${a.jobId}`)).body.data.status).toBe("completed");
    expect((await callA("GET", "/orgs/current")).body.data.webhookUrl).toBe(receiver.url);
  });

  it("answers Task not found to B's MCP task requests on A's job and batch (tasks/get, tasks/result, tasks/cancel)", async () => {
    for (const taskId of [a.jobId, a.batchId]) {
      await expect(bMcp.experimental.tasks.getTask(taskId)).rejects.toMatchObject({ code: -32602, message: expect.stringMatching(/Task not found/) });
      await expect(bMcp.experimental.tasks.getTaskResult(taskId)).rejects.toMatchObject({ code: -32602, message: expect.stringMatching(/Task not found/) });
      await expect(bMcp.experimental.tasks.cancelTask(taskId)).rejects.toMatchObject({ code: -32602, message: expect.stringMatching(/Task not found/) });
    }
    expect((await callA("GET", `/jobs/${a.jobId}`)).body.data.status).toBe("completed");
  });

  it("hides A's resources from B's MCP list tools (list_jobs by batchId, list_webhook_deliveries by jobId)", async () => {
    for (const [name, args] of [["list_jobs", { batchId: a.batchId }], ["list_webhook_deliveries", { jobId: a.jobId }]] as const) {
      const result = (await bMcp.callTool({ name, arguments: args })) as CallToolResult;
      const text = (result.content[0] as { text: string }).text;
      if (result.isError) expect(text).toMatch(/^NOT_FOUND: /);
      else expect((result.structuredContent as { data: unknown[] }).data).toEqual([]);
    }
  });

  it("answers 404 NOT_FOUND, not a stream, for the job events SSE stream of A's job", async () => {
    const response = await fetch(`${system.gatewayUrl}/jobs/${a.jobId}/events`, { headers: { authorization: `Bearer ${bKey}`, accept: "text/event-stream" } });
    expect(response.status).toBe(404);
    expect(response.headers.get("content-type")).toMatch(/application\/json/);
    expect(((await response.json()) as { error: { code: string } }).error.code).toBe("NOT_FOUND");
    // The owner gets the stream (so the 404 above is about the tenant, not the route).
    const own = await fetch(`${system.gatewayUrl}/jobs/${a.jobId}/events`, { headers: { authorization: `Bearer ${aKey}` } });
    expect(own.status).toBe(200);
    expect(await own.text()).toContain("event: completed");
  });

  it("streams none of A's webhook events to B on GET /webhooks/events/stream (A's own stream gets them)", async (context) => {
    const open = async (key: string) => {
      const controller = new AbortController();
      const response = await fetch(`${system.gatewayUrl}/webhooks/events/stream`, { headers: { authorization: `Bearer ${key}` }, signal: controller.signal });
      let text = "";
      const reading = (async () => {
        const decoder = new TextDecoder();
        try {
          for await (const chunk of response.body as AsyncIterable<Uint8Array>) text += decoder.decode(chunk, { stream: true });
        } catch {
          // aborted
        }
      })();
      return { status: response.status, text: () => text, close: async () => (controller.abort(), await reading) };
    };
    const probe = await open(bKey);
    if (probe.status === 404) {
      await probe.close();
      context.skip("no webhook event stream in this build");
      return;
    }
    const [forA, forB] = [await open(aKey), probe];
    expect([forA.status, forB.status]).toEqual([200, 200]);
    await waitFor(() => (forA.text().includes("event: ready") && forB.text().includes("event: ready") ? true : undefined), { timeoutMs: 30_000, what: "both streams ready" });
    const job = await callA("POST", "/jobs", { type: "qr.generate", params: { content: "streamed to A only" } });
    await waitFor(() => (forA.text().includes(job.body.data.id) && forA.text().includes("job.completed") ? true : undefined), { timeoutMs: 90_000, what: "A's stream to carry A's job.completed" });
    await forA.close();
    await forB.close();
    expect(forB.text()).not.toContain(job.body.data.id);
    expect(forB.text()).not.toContain(a.orgId);
  });

  it("opens A's output only with its signed URL: B's key on the output path is 401, a tampered signature too", async () => {
    const job = (await callA("GET", `/jobs/${a.jobId}`)).body.data;
    const signed = new URL(job.result.url);
    expect((await fetch(signed)).status).toBe(200);
    const unsigned = await fetch(`${system.gatewayUrl}${signed.pathname}`, { headers: { authorization: `Bearer ${bKey}` } });
    expect(unsigned.status).toBe(401);
    const tampered = new URL(signed);
    tampered.searchParams.set("signature", "0".repeat(64));
    const forged = await fetch(tampered, { headers: { authorization: `Bearer ${bKey}` } });
    expect(forged.status).toBe(401);
    expect(((await forged.json()) as { error: { code: string } }).error.code).toBe("UNAUTHORIZED");
  });

  it("serves the shared job-type catalogue the same to both orgs (its id is not a tenant resource)", async () => {
    for (const key of NOT_TENANT_SCOPED) expect(idOperations().map((operation) => operation.key)).toContain(key);
    const [forA, forB] = await Promise.all([callA("GET", "/job-types/thumbnail"), callB("GET", "/job-types/thumbnail")]);
    expect(forB.status).toBe(200);
    expect(forB.body).toEqual(forA.body);
  });
});
