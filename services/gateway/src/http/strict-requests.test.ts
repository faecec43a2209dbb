import { describe, expect, it } from "vitest";
import { AppError } from "@renderbus/errors";
import { apiRoutes } from "../routes/index.js";
import { buildMcpTools, splitToolArguments } from "../mcp/mcp-tools.js";
import { buildOpenApiDocument } from "../openapi/openapi-document.js";
import { parseRequestPart } from "./validation.js";
import { MAX_JSON_DEPTH } from "./json-depth.js";
import { inertGatewayApp } from "./inert-gateway.test-support.js";

const route = (operationId: string) => apiRoutes.find((candidate) => candidate.operationId === operationId)!;

/** The VALIDATION_ERROR message a request part gets, or "accepted". */
function outcome(operationId: string, part: "body" | "query", value: unknown): string {
  try {
    parseRequestPart(route(operationId)[part], value, part);
    return "accepted";
  } catch (error) {
    expect(error).toBeInstanceOf(AppError);
    expect((error as AppError).code).toBe("VALIDATION_ERROR");
    return (error as AppError).message;
  }
}

describe("routes that take no body or no query parameters (SECURITY-AUDIT finding 20)", () => {
  it.each(["cancelJob", "retryWebhookDelivery", "sendTestWebhook", "revokeApiKey"])("%s accepts an absent body or {}, and refuses any field, null or an array", (operationId) => {
    expect(outcome(operationId, "body", undefined)).toBe("accepted");
    expect(outcome(operationId, "body", {})).toBe("accepted");
    expect(outcome(operationId, "body", { force: true })).toBe("body: unknown field force");
    expect(outcome(operationId, "body", null)).not.toBe("accepted");
    expect(outcome(operationId, "body", [])).not.toBe("accepted");
  });

  it("gives every non-GET route a body schema and every route a query schema", () => {
    for (const candidate of apiRoutes) {
      expect(candidate.query, candidate.operationId).toBeDefined();
      if (candidate.method !== "GET") expect(candidate.body, candidate.operationId).toBeDefined();
    }
  });

  it.each(["getJob", "getMe", "listApiKeys", "getBalance", "listJobTypes", "cancelJob", "submitJob"].filter((id) => apiRoutes.some((candidate) => candidate.operationId === id)))(
    "%s refuses an unknown query parameter",
    (operationId) => {
      expect(outcome(operationId, "query", {})).toBe("accepted");
      expect(outcome(operationId, "query", { verbose: "1" })).toBe("query query: unknown field verbose");
    },
  );

  it("still accepts the declared query parameters of list routes and refuses others", () => {
    expect(outcome("listJobs", "query", { limit: "5" })).toBe("accepted");
    expect(outcome("listJobs", "query", { limit: "5", verbose: "1" })).toMatch(/unknown field verbose/);
  });

  it("documents the empty body as optional and strict in OpenAPI, and keeps the submit body required", () => {
    const document = buildOpenApiDocument("http://127.0.0.1:3000") as { paths: Record<string, Record<string, { requestBody?: { required: boolean; content: Record<string, { schema: Record<string, unknown> }> } }>> };
    const cancel = document.paths["/jobs/{jobId}/cancel"]!.post!.requestBody!;
    expect(cancel.required).toBe(false);
    expect(cancel.content["application/json"]!.schema).toMatchObject({ type: "object", additionalProperties: false });
    expect(document.paths["/jobs"]!.post!.requestBody!.required).toBe(true);
  });

  it("gives MCP tools of such routes no body argument, and refuses one", () => {
    const cancel = buildMcpTools(apiRoutes).find((tool) => tool.name === "cancel_job")!;
    expect(Object.keys(cancel.inputSchema.properties as object)).toEqual(["jobId"]);
    expect(splitToolArguments(cancel, { jobId: "job_1" })).toEqual({ params: { jobId: "job_1" }, query: {}, body: {} });
    expect(() => splitToolArguments(cancel, { jobId: "job_1", force: true })).toThrow(/unknown argument force/);
  });
});

describe("the JSON body parser", () => {
  const nested = (depth: number) => `${"[".repeat(depth)}1${"]".repeat(depth)}`;

  it("answers 400 VALIDATION_ERROR to a body nested deeper than the limit, before authentication or anything else", async () => {
    const app = await inertGatewayApp();
    const started = performance.now();
    const response = await app.inject({ method: "POST", url: "/jobs", headers: { "content-type": "application/json" }, payload: `{"type":"qr.generate","metadata":{"m":${nested(150_000)}}}` });
    expect(performance.now() - started).toBeLessThan(1000);
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: { code: "VALIDATION_ERROR", message: `body: nested deeper than ${MAX_JSON_DEPTH} levels` } });
    await app.close();
  });

  it("refuses deep MCP tool arguments the same way (the /mcp body goes through the same parser)", async () => {
    const app = await inertGatewayApp();
    const call = { jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "submit_job", arguments: { type: "qr.generate", metadata: { m: "__DEEP__" } } } };
    const response = await app.inject({
      method: "POST",
      url: "/mcp",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      payload: JSON.stringify(call).replace('"__DEEP__"', nested(MAX_JSON_DEPTH)),
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toMatchObject({ error: { code: "VALIDATION_ERROR" } });
    await app.close();
  });

  it("refuses a JSON-RPC batch on /mcp: one message per request, as each request is counted once", async () => {
    const app = await inertGatewayApp();
    const list = (id: number) => ({ jsonrpc: "2.0", id, method: "tools/list" });
    const response = await app.inject({
      method: "POST",
      url: "/mcp",
      headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
      payload: JSON.stringify([list(1), list(2)]),
    });
    expect(response.statusCode).toBe(400);
    expect(response.json()).toEqual({ error: { code: "VALIDATION_ERROR", message: "body: JSON-RPC batches are not accepted; send one message per request" } });
    await app.close();
  });

  /** The app with a route that answers the body it was given, to see what the parser hands on. */
  const echoApp = () => inertGatewayApp({}, { addRoutes: (app) => app.post("/test/echo", async (request) => ({ body: request.body ?? "absent" })) });

  it("hands a body at the limit on, parsed", async () => {
    const app = await echoApp();
    const payload = `{"metadata":{"m":${nested(MAX_JSON_DEPTH - 2)}}}`;
    const response = await app.inject({ method: "POST", url: "/test/echo", headers: { "content-type": "application/json" }, payload });
    expect(response.statusCode).toBe(200);
    expect(response.json()).toEqual({ body: JSON.parse(payload) as unknown });
    await app.close();
  });

  it("still answers malformed JSON with 400, treats an empty body as no body, and drops prototype keys", async () => {
    const app = await echoApp();
    const send = (payload: string) => app.inject({ method: "POST", url: "/test/echo", headers: { "content-type": "application/json" }, payload });
    const malformed = await send('{"type":');
    expect(malformed.statusCode).toBe(400);
    expect(malformed.json()).toEqual({ error: { code: "VALIDATION_ERROR", message: "body: malformed JSON" } });
    expect((await send("")).json()).toEqual({ body: "absent" });
    expect((await send('{"a":1,"__proto__":{"polluted":true}}')).json()).toEqual({ body: { a: 1 } });
    await app.close();
  });
});

describe("router-level refusals", () => {
  it("carry X-Request-Id and the error body like every other response (a malformed escape, an overlong path parameter)", async () => {
    const app = await inertGatewayApp();
    for (const url of ["/jobs/%ZZ", `/jobs/job_${"a".repeat(200)}`]) {
      const response = await app.inject({ method: "GET", url, headers: { "x-request-id": "req-router-1" } });
      expect(response.statusCode, url).toBeGreaterThanOrEqual(400);
      expect(response.headers["x-request-id"], url).toBe("req-router-1");
      expect(response.json(), url).toMatchObject({ error: { code: expect.any(String), message: expect.any(String) } });
    }
    await app.close();
  });
});
