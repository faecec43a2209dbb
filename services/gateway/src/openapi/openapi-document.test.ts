import { Validator } from "@seriousme/openapi-schema-validator";
import { describe, expect, it, vi } from "vitest";
import { z } from "zod";
import { ERROR_CODES } from "@renderbus/errors";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { loadPlans } from "@renderbus/plans";
import { createLocalUploadStore } from "@renderbus/uploads";
import { createLogger, createMetricsRegistry } from "@renderbus/telemetry";
import { jobProgressPayload } from "@renderbus/webhook-payloads";
import { gatewayConfigSchema } from "../config.js";
import type { GatewayDeps } from "../deps.js";
import { defineRoute, type RouteDefinition } from "../http/route.js";
import { apiRoutes } from "../routes/index.js";
import { list } from "../routes/response-schemas.js";
import { RenderbusClient } from "../../../../packages/sdk/src/client.js";
import { buildOpenApiDocument, openApiPath, type OpenApiDocument } from "./openapi-document.js";
import { undocumentedProblems } from "./openapi-lint.js";

/** Every route the gateway registers, seen by an `onRoute` hook installed on each Fastify instance it creates. */
const seenRoutes = vi.hoisted(() => [] as { method: string; url: string }[]);
vi.mock("fastify", async (importOriginal) => {
  const original = await importOriginal<typeof import("fastify")>();
  const fastify = original.default as unknown as (options?: object) => import("fastify").FastifyInstance;
  const create = ((options?: object) => {
    const app = fastify(options);
    app.addHook("onRoute", (route) => {
      const methods: unknown = route.method;
      for (const method of Array.isArray(methods) ? methods : [methods]) seenRoutes.push({ method: String(method), url: route.url });
    });
    return app;
  }) as unknown as typeof original.default;
  return { ...original, default: create };
});

/**
 * Routes the gateway registers that are deliberately not in the API document, with the reason. Everything else the
 * gateway serves must be described, or this test fails.
 */
const NOT_PUBLIC_API: { pattern: RegExp; reason: string }[] = [
  { pattern: /^\/auth(\/|$)/, reason: "Better Auth's own endpoints (sign-up, sign-in, OAuth), proxied to the auth service" },
  { pattern: /^\/\.well-known\//, reason: "OAuth discovery metadata for MCP clients (RFC 9728 / RFC 8414)" },
  { pattern: /^\/app(\/|$)/, reason: "the dashboard's HTML and assets" },
  { pattern: /^\/(assets|favicon)/, reason: "dashboard static files" },
  { pattern: /^\/$/, reason: "redirect to the dashboard" },
  { pattern: /^\/(healthz|readyz|metrics)$/, reason: "operational endpoints for orchestrators and Prometheus (docs/operations.md)" },
  { pattern: /^\/(openapi\.json|docs)$/, reason: "this document and its rendering" },
  { pattern: /^\/docs\/assets\//, reason: "the scripts of the rendered reference" },
  { pattern: /^(GET|DELETE) \/mcp$/, reason: "answer 405: the stateless MCP transport has no standalone stream or session to delete" },
];

/**
 * The gateway's app module, loaded afresh so that it imports the mocked Fastify: test files share their worker's
 * modules (vitest.config.ts), and an earlier file may have loaded the real one.
 */
let appModule: Promise<typeof import("../app.js")> | undefined;
function loadAppModule() {
  if (!appModule) {
    vi.resetModules();
    appModule = import("../app.js");
  }
  return appModule;
}

/** The gateway app with inert dependencies: enough to register every route (no request reaches a service here). */
async function gatewayApp() {
  const { buildApp } = await loadAppModule();
  const deps = {
    config: gatewayConfigSchema.parse({}),
    logger: createLogger({ service: "openapi-test", level: "silent" }),
    plans: loadPlans(undefined),
    metrics: createMetricsRegistry("openapi-test"),
    jobEvents: { close: () => undefined },
    // A tus server is built over the upload store at start-up; no upload request reaches it here.
    uploads: createLocalUploadStore({ directory: mkdtempSync(join(tmpdir(), "rb-gateway-uploads-")), retentionMs: 3_600_000 }),
    // Limiters register their Lua scripts and SSE streams subscribe to revocations at start-up; nothing runs here.
    redis: { defineCommand: () => undefined },
    bus: { listen: () => () => undefined },
  } as unknown as GatewayDeps;
  const app = await buildApp(deps);
  await app.ready();
  return app;
}

/**
 * [METHOD, OpenAPI path] of every route the app serves (HEAD and OPTIONS are implied by GET / CORS, except tus' HEAD
 * offset request on an upload, an operation of its own).
 */
function registeredRoutes(): [string, string][] {
  return seenRoutes
    .filter(({ method, url }) => method !== "OPTIONS" && (method !== "HEAD" || url === "/uploads/:uploadId"))
    .map(({ method, url }) => [method, openApiPath(url.replace(/\*$/, "{key}"))] as [string, string]);
}

describe("the OpenAPI document at /openapi.json", () => {
  it("is a valid OpenAPI 3.1 document", async () => {
    const app = await gatewayApp();
    const response = await app.inject({ url: "/openapi.json" });
    expect(response.statusCode).toBe(200);
    const document = response.json() as OpenApiDocument;
    expect(document.openapi).toBe("3.1.0");
    const result = await new Validator().validate(document as never);
    expect(result.errors ?? []).toEqual([]);
    expect(result.valid).toBe(true);
    await app.close();
  });

  it("serves the rendered reference at /docs from this origin, under a CSP without inline or eval'd script", async () => {
    const app = await gatewayApp();
    const response = await app.inject({ url: "/docs" });
    expect(response.statusCode).toBe(200);
    const csp = response.headers["content-security-policy"] as string;
    expect(csp).toContain("default-src 'none'");
    expect(csp).toContain("script-src 'self';");
    expect(csp).not.toMatch(/unsafe-eval|script-src[^;]*unsafe-inline/);
    expect(response.body).not.toMatch(/<script>|<style|https?:\/\//);
    const scripts = [...response.body.matchAll(/<script src="([^"]+)"><\/script>/g)].map((match) => match[1]!);
    expect(scripts).toEqual(["/docs/assets/reference.js", expect.stringMatching(/^\/docs\/assets\/scalar-api-reference-[\d.]+\.js$/)]);
    for (const script of scripts) {
      const asset = await app.inject({ url: script, headers: { "accept-encoding": "gzip" } });
      expect(asset.statusCode, script).toBe(200);
      expect(asset.headers["content-type"]).toMatch(/^text\/javascript/);
    }
    const mount = await app.inject({ url: "/docs/assets/reference.js" });
    expect(mount.body).toContain('"url":"/openapi.json"');
    await app.close();
  });

  it("describes every public route the gateway registers, and nothing it does not serve", async () => {
    const app = await gatewayApp();
    const document = buildOpenApiDocument("http://127.0.0.1:3000");
    const registered = registeredRoutes();
    expect(registered.length).toBeGreaterThan(apiRoutes.length);
    const publicRoutes = registered.filter(([method, path]) => !NOT_PUBLIC_API.some(({ pattern }) => pattern.test(path) || pattern.test(`${method} ${path}`)));
    const documented = Object.entries(document.paths).flatMap(([path, operations]) => Object.keys(operations).map((method) => [method.toUpperCase(), path] as [string, string]));
    const key = ([method, path]: [string, string]) => `${method} ${path}`;
    expect(publicRoutes.map(key).filter((route) => !documented.map(key).includes(route))).toEqual([]);
    expect(documented.map(key).filter((route) => !registered.map(key).includes(route))).toEqual([]);
    await app.close();
  });

  it("gives every operation a summary, a description and 4xx responses with the error schema", () => {
    expect(undocumentedProblems(buildOpenApiDocument("http://127.0.0.1:3000"))).toEqual([]);
  });

  it("fails the check for a route without a description", () => {
    const undocumented = defineRoute({
      method: "GET",
      url: "/widgets",
      operationId: "listWidgets",
      summary: "List widgets",
      description: "",
      tag: "Jobs",
      errors: [],
      response: list("Job"),
      handler: async () => ({ data: [] }),
    }) as RouteDefinition;
    expect(undocumentedProblems(buildOpenApiDocument("http://x", [...apiRoutes, undocumented]))).toEqual(["GET /widgets: no description"]);
  });

  it("gives every operation a curl sample, and an SDK sample that calls a method RenderbusClient has", () => {
    const document = buildOpenApiDocument("https://api.renderbus.example");
    const client = new RenderbusClient({ apiKey: "rb_example" }) as unknown as Record<string, unknown>;
    const withoutSdk: string[] = [];
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations) as [string, { operationId: string; "x-codeSamples": { label: string; source: string }[] }][]) {
        const [curl, sdk] = operation["x-codeSamples"];
        expect(curl!.source, operation.operationId).toMatch(new RegExp(`^curl .*'https://api\\.renderbus\\.example${path.replace(/\{\w+\}/g, "[^?']+")}[?']`));
        if (method !== "get") expect(curl!.source).toContain(`-X ${method.toUpperCase()}`);
        if (!sdk) {
          withoutSdk.push(operation.operationId);
          continue;
        }
        const call = /client\.([\w.]+)\(/.exec(sdk.source)?.[1];
        const target = call!.split(".").reduce<unknown>((object, name) => (object as Record<string, unknown> | undefined)?.[name], client);
        expect(typeof target, `${operation.operationId}: client.${call}`).toBe("function");
      }
    }
    // The signed download link and MCP are not SDK methods: a browser or an MCP client uses them; the tus requests
    // after an upload's creation are made by a tus client.
    expect(withoutSdk.sort()).toEqual(["appendToUpload", "createUpload", "deleteUpload", "downloadOutput", "getUploadOffset", "mcp"]);
  });

  it("shows the submit body's example, which the route's own schema accepts", () => {
    const document = buildOpenApiDocument("http://127.0.0.1:3000");
    for (const route of apiRoutes.filter((candidate) => candidate.body)) {
      const operation = (document.paths[openApiPath(route.url)] as Record<string, { requestBody: { content: { "application/json": { examples?: { example: { value: unknown } } } } } }>)[route.method.toLowerCase()]!;
      const example = operation.requestBody.content["application/json"].examples?.example.value;
      if (example !== undefined) expect(route.body!.safeParse(example).success, route.operationId).toBe(true);
    }
    expect((document.paths["/jobs"] as Record<string, { requestBody: { content: { "application/json": { examples: object } } } }>).post!.requestBody.content["application/json"].examples).toBeDefined();
  });

  it("documents every error code, each under its HTTP status", () => {
    const document = buildOpenApiDocument("http://127.0.0.1:3000");
    const seen = new Set<string>();
    for (const operations of Object.values(document.paths)) {
      for (const operation of Object.values(operations) as { responses: Record<string, { "x-protocol"?: string; content?: Record<string, { examples?: Record<string, unknown> }> }> }[]) {
        for (const [status, response] of Object.entries(operation.responses)) {
          for (const code of Object.keys(response.content?.["application/json"]?.examples ?? {})) {
            // tus answers keep tus' statuses (docs/uploads.md, "Errors"); such a response says so, and is a 4xx.
            if (response["x-protocol"] === "tus") expect(Number(status), code).toBeGreaterThanOrEqual(400);
            else expect(String(ERROR_CODES[code as keyof typeof ERROR_CODES]), code).toBe(status);
            seen.add(code);
          }
        }
      }
    }
    expect([...seen].sort()).toEqual(Object.keys(ERROR_CODES).sort());
  });

  it("lists the webhook payloads under `webhooks`, one per event, matching what the dispatcher sends", () => {
    const document = buildOpenApiDocument("http://127.0.0.1:3000");
    expect(Object.keys(document.webhooks).sort()).toEqual(["batch.completed", "endpoint.disabled", "job.completed", "job.failed", "job.progress", "job.running", "webhook.test"]);
    const schemas = document.components.schemas as Record<string, { required?: readonly string[]; properties?: Record<string, unknown> }>;
    // docs/webhooks.md: job.failed carries no cost; job.completed carries result, cost and timing.
    expect(schemas.JobFailedEvent!.properties).not.toHaveProperty("cost");
    expect(schemas.JobCompletedEvent!.required).toEqual(["event", "jobId", "result", "cost", "timing"]);
    // job.progress: the members the dispatcher's builder writes, in its order.
    expect(schemas.JobProgressEvent!.required).toEqual(Object.keys(jobProgressPayload({ orgId: "org_1", jobId: "job_1", percent: 1, etaMs: 1, updatedAt: 1 })));
    const headers = (document.webhooks["job.completed"].post.parameters as { name: string }[]).map((parameter) => parameter.name);
    expect(headers).toEqual(expect.arrayContaining(["X-Renderbus-Signature", "X-Renderbus-Event", "X-Renderbus-Delivery", "X-Renderbus-Attempt", "X-Renderbus-Timestamp", "webhook-id", "webhook-timestamp", "webhook-signature"]));
  });

  it("describes request bodies with the same schemas that validate them (unknown fields rejected)", () => {
    const document = buildOpenApiDocument("http://127.0.0.1:3000");
    const submit = (document.paths["/jobs"] as Record<string, { requestBody: { content: { "application/json": { schema: Record<string, unknown> } } } }>).post!;
    const schema = submit.requestBody.content["application/json"].schema;
    expect(schema.additionalProperties).toBe(false);
    expect(schema.required).toContain("type");
    const validating = z.toJSONSchema(apiRoutes.find((route) => route.operationId === "submitJob")!.body!, { unrepresentable: "any" }) as { properties: object };
    expect(Object.keys(schema.properties as object)).toEqual(Object.keys(validating.properties));
  });
});
