import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { jobs } from "@renderbus/contracts";
import { authContextOf, bodyOf, gatewayWithFakes, newApiKey, type GatewayWithFakes } from "./gateway-with-fakes.test-support.js";
import { MAX_JSON_DEPTH } from "./json-depth.js";

/**
 * Request validation, in process over a fake jobs service that records what reaches it: a malformed, oversized,
 * too deep or over-specified request is a 400 (or 413) whose message names the problem, and reaches no service.
 */

const KEY = newApiKey();
const submitted: unknown[] = [];
const listed: unknown[] = [];

let gateway: GatewayWithFakes;
beforeAll(async () => {
  gateway = await gatewayWithFakes(
    {
      auth: { resolveApiKey: async () => authContextOf({ plan: "scale" }) },
      jobs: {
        submitJob: async (request) => {
          submitted.push(request);
          return { job: { id: "job_1", orgId: "org_1", type: request.job!.type, status: "waiting", inputs: {}, params: {}, metadata: {}, webhookDeliveries: [] }, replayed: false } as unknown as jobs.SubmitJobResponse;
        },
        listJobs: async (request) => {
          listed.push(request);
          return { jobs: [], nextCursor: "" } as unknown as jobs.ListJobsResponse;
        },
      },
    },
    { IP_REQUESTS_PER_MINUTE: "100000" },
  );
});
afterAll(() => gateway?.close());

function post(payload: string, contentType = "application/json") {
  return gateway.app.inject({ method: "POST", url: "/jobs", headers: { authorization: `Bearer ${KEY}`, "content-type": contentType }, payload });
}

/** `[status, code, message]` of a refused request. */
function refusalOf(response: { statusCode: number; body: string }) {
  const { error } = bodyOf(response as never) as { error: { code: string; message: string } };
  return [response.statusCode, error.code, error.message];
}

const nested = (depth: number): string => "[".repeat(depth) + "]".repeat(depth);

describe("request validation", () => {
  it("names the Idempotency-Key header when its value is refused, and sends nothing on", async () => {
    const response = await gateway.app.inject({
      method: "POST",
      url: "/jobs",
      headers: { authorization: `Bearer ${KEY}`, "content-type": "application/json", "idempotency-key": "has a space" },
      payload: JSON.stringify({ type: "thumbnail", inputs: { source: "https://example.com/a.mp4" } }),
    });
    expect(refusalOf(response)).toEqual([400, "VALIDATION_ERROR", "Idempotency-Key: must be printable ASCII without spaces"]);
    expect(submitted).toHaveLength(0);
  });

  it("accepts a well-formed submission (the fake service sees it)", async () => {
    const response = await post(JSON.stringify({ type: "thumbnail", inputs: { source: "https://example.com/a.mp4" } }));
    expect(response.statusCode).toBe(201);
    expect(submitted).toHaveLength(1);
    submitted.length = 0;
  });

  it.each([
    ["malformed JSON", '{"type": "thumbnail",', [400, "VALIDATION_ERROR", "body: malformed JSON"]],
    ["an unknown field", JSON.stringify({ type: "thumbnail", priority: "high" }), [400, "VALIDATION_ERROR", "body: unknown field priority"]],
    ["a field of the wrong type", JSON.stringify({ type: 42 }), [400, "VALIDATION_ERROR", "type: Invalid input: expected string, received number"]],
    ["a missing required field", JSON.stringify({ inputs: {} }), [400, "VALIDATION_ERROR", "type: Invalid input: expected string, received undefined"]],
    ["a JSON array instead of an object", "[]", [400, "VALIDATION_ERROR", "body: Invalid input: expected object, received array"]],
    ["a NUL character", JSON.stringify({ type: "thumbnail", metadata: { note: "a\u0000b" } }), [400, "VALIDATION_ERROR", "metadata.note: must not contain NUL characters"]],
    [`JSON nested deeper than ${MAX_JSON_DEPTH} levels`, JSON.stringify({ type: "thumbnail", params: { deep: JSON.parse(nested(MAX_JSON_DEPTH + 1)) as unknown } }), [400, "VALIDATION_ERROR", `body: nested deeper than ${MAX_JSON_DEPTH} levels`]],
  ])("refuses %s with a 400 naming it, and submits nothing", async (_case, payload, expected) => {
    expect(refusalOf(await post(payload))).toEqual(expected);
    expect(submitted).toEqual([]);
  });

  it("still parses a body exactly at the depth limit (and validates it as usual)", async () => {
    const atLimit = JSON.stringify({ type: "thumbnail", params: { deep: JSON.parse(nested(MAX_JSON_DEPTH - 2)) as unknown } });
    expect((await post(atLimit)).statusCode).toBe(201);
    submitted.length = 0;
  });

  it("refuses a body that is not JSON, and one over 1 MB with 413, submitting nothing", async () => {
    expect(refusalOf(await post("type=thumbnail", "application/x-www-form-urlencoded"))).toEqual([400, "VALIDATION_ERROR", "body: Content-Type must be application/json"]);
    const huge = JSON.stringify({ type: "thumbnail", metadata: { padding: "x".repeat(1024 * 1024) } });
    expect(refusalOf(await post(huge))).toEqual([413, "PAYLOAD_TOO_LARGE", "Request body is larger than 1 MB"]);
    expect(submitted).toEqual([]);
  });

  it("refuses unknown and out-of-range query parameters, and lists with the declared ones", async () => {
    const list = (query: string) => gateway.app.inject({ method: "GET", url: `/jobs?${query}`, headers: { authorization: `Bearer ${KEY}` } });
    expect(refusalOf(await list("verbose=1"))).toEqual([400, "VALIDATION_ERROR", "query query: unknown field verbose"]);
    expect((await list("limit=0")).statusCode).toBe(400);
    expect((await list("limit=101")).statusCode).toBe(400);
    expect(listed).toEqual([]);
    expect((await list("limit=5")).statusCode).toBe(200);
    expect(listed).toMatchObject([{ limit: 5 }]);
  });

  it("refuses a request target that is not a path", async () => {
    const response = await gateway.app.inject({ method: "GET", url: "//evil.example/jobs", headers: { authorization: `Bearer ${KEY}` } });
    expect(refusalOf(response)).toEqual([400, "VALIDATION_ERROR", "Request target must be a path starting with /"]);
  });
});
