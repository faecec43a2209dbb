import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import { createLogger } from "@renderbus/telemetry";
import { buildOpenApiDocument } from "../openapi/openapi-document.js";
import { registerResponseCheck, responseChecker, type ResponseMismatch } from "./response-check.js";

const document = buildOpenApiDocument("http://127.0.0.1:3000");

const job = {
  id: "job_01",
  orgId: "org_01",
  batchId: null,
  type: "thumbnail",
  status: "completed",
  inputs: { source: "https://example.com/clip.mp4" },
  params: {},
  metadata: {},
  result: { url: "https://example.com/out.png", metadata: { durationMs: null, width: 320, height: 240, fileSize: 1234 } },
  cost: { credits: 1, breakdown: "1 credit" },
  error: null,
  timing: { createdAt: 1, dispatchedAt: 2, startedAt: 3, completedAt: 4 },
  progress: { percent: 100, etaMs: 0, updatedAt: 4 },
  webhookDeliveries: [],
};

/** A Fastify app with two documented routes answering `body` with `status`, behind the check. */
async function appAnswering(status: number, body: unknown) {
  const app = Fastify();
  const mismatches: ResponseMismatch[] = [];
  registerResponseCheck(app, document, createLogger({ service: "response-check-test", level: "silent" }), (mismatch) => mismatches.push(mismatch));
  app.get("/jobs/:jobId", async (_request, reply) => reply.status(status).send(body));
  app.get("/jobs/:jobId/events", async (_request, reply) => reply.type("text/event-stream").send("event: waiting\ndata: {}\n\n"));
  await app.ready();
  return { app, mismatches };
}

describe("the test-mode response check against /openapi.json", () => {
  it("passes a body that matches the route's response schema, and a documented error", async () => {
    for (const [status, body] of [[200, { data: job }], [404, { error: { code: "NOT_FOUND", message: "Job not found" } }]] as const) {
      const { app, mismatches } = await appAnswering(status, body);
      const response = await app.inject({ url: "/jobs/job_01" });
      expect(response.statusCode).toBe(status);
      expect(response.json()).toEqual(body);
      expect(mismatches).toEqual([]);
      await app.close();
    }
  });

  it("answers 500 naming the mismatch when a field is missing or has the wrong type", async () => {
    const { app, mismatches } = await appAnswering(200, { data: { ...job, status: 3 } });
    const response = await app.inject({ url: "/jobs/job_01" });
    expect(response.statusCode).toBe(500);
    expect(response.json().error.code).toBe("INTERNAL_ERROR");
    expect(response.json().error.message).toMatch(/status 200 of GET \/jobs\/\{jobId\}: body\/data\/status must be string/);
    expect(mismatches).toEqual([expect.objectContaining({ method: "GET", path: "/jobs/{jobId}", status: 200 })]);
    await app.close();
  });

  it("answers 500 for a status the operation does not document", async () => {
    const { app } = await appAnswering(409, { error: { code: "CONFLICT", message: "no" } });
    const response = await app.inject({ url: "/jobs/job_01" });
    expect(response.statusCode).toBe(500);
    expect(response.json().error.message).toMatch(/status 409 is not documented for GET \/jobs\/\{jobId\}/);
    await app.close();
  });

  it("leaves streams and undocumented paths alone", async () => {
    const { app, mismatches } = await appAnswering(200, { data: job });
    const stream = await app.inject({ url: "/jobs/job_01/events" });
    expect(stream.statusCode).toBe(200);
    expect(mismatches).toEqual([]);
    const check = responseChecker(document);
    expect(check("GET", "/not-documented", 200, "application/json", "{}")).toBeUndefined();
    expect(check("GET", "/jobs", 200, "application/json", JSON.stringify({ data: [job] }))).toMatch(/must have required property 'nextCursor'/);
    expect(check("GET", "/jobs", 200, "application/json", JSON.stringify({ data: [job], nextCursor: null }))).toBeUndefined();
    await app.close();
  });
});
