import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { AppError, ERROR_CODES, type ErrorCode } from "@renderbus/errors";
import { authContextOf, bodyOf, gatewayWithFakes, newApiKey, type GatewayWithFakes } from "./gateway-with-fakes.test-support.js";

/**
 * The one error mapping (http/errors.ts), in process over fake services: whatever a service answers a route with
 * reaches the client as `{error: {code, message}}` under that code's status, with the headers some codes carry, and
 * anything that is not an AppError becomes a 500 that says nothing of its cause.
 */

const KEY = newApiKey();
const headers = { authorization: `Bearer ${KEY}` };
/** What the fake jobs service's GetJob throws for the job id asked for (`job_<CODE>`, `job_crash`, ...). */
const failures = new Map<string, unknown>();

let gateway: GatewayWithFakes;
beforeAll(async () => {
  gateway = await gatewayWithFakes(
    {
      auth: { resolveApiKey: async () => authContextOf({ plan: "scale" }) },
      jobs: {
        getJob: async ({ jobId }) => {
          throw failures.get(jobId) ?? new Error(`no failure set for ${jobId}`);
        },
      },
    },
    // Every case below is one request of one org: no budget may run out here.
    { IP_REQUESTS_PER_MINUTE: "100000" },
  );
});
afterAll(() => gateway?.close());

async function getJobFailingWith(error: unknown, jobId: string) {
  failures.set(jobId, error);
  return gateway.app.inject({ method: "GET", url: `/jobs/${jobId}`, headers });
}

describe("error mapping", () => {
  it.each(Object.keys(ERROR_CODES) as ErrorCode[])("answers a service's %s with its status and body", async (code) => {
    const response = await getJobFailingWith(new AppError(code, `the service says ${code}`), `job_${code}`);
    expect(response.statusCode).toBe(new AppError(code, "").httpStatus);
    expect(bodyOf(response)).toEqual({ error: { code, message: `the service says ${code}` } });
    expect(response.headers["content-type"]).toMatch(/^application\/json/);
    expect(response.headers["x-request-id"]).toBeTruthy();
  });

  it("adds the Bearer challenge to a 401 and Retry-After to a 429 that knows when to come back", async () => {
    const unauthorized = await getJobFailingWith(new AppError("UNAUTHORIZED", "no"), "job_unauthorized");
    expect(unauthorized.headers["www-authenticate"]).toBe('Bearer realm="renderbus"');
    const limited = await getJobFailingWith(new AppError("RATE_LIMITED", "slow down", { retryAfterSeconds: 17 }), "job_limited");
    expect(limited.headers["retry-after"]).toBe("17");
    const otherwise = await getJobFailingWith(new AppError("NOT_FOUND", "Job not found"), "job_missing");
    expect(otherwise.headers["www-authenticate"]).toBeUndefined();
    expect(otherwise.headers["retry-after"]).toBeUndefined();
  });

  it("answers an error that is not an AppError with 500 INTERNAL_ERROR, without its message", async () => {
    const response = await getJobFailingWith(new Error("connection string postgres://admin:hunter2@db"), "job_crash");
    expect(response.statusCode).toBe(500);
    expect(bodyOf(response)).toEqual({ error: { code: "INTERNAL_ERROR", message: "Internal error" } });
    expect(response.body).not.toContain("hunter2");
  });

  it("answers an unreachable dependency with 503 SERVICE_UNAVAILABLE (safe to retry), not 500", async () => {
    const refused = Object.assign(new Error("connect ECONNREFUSED 127.0.0.1:50052"), { code: "ECONNREFUSED" });
    const response = await getJobFailingWith(refused, "job_unreachable");
    expect(response.statusCode).toBe(503);
    expect(bodyOf(response)).toMatchObject({ error: { code: "SERVICE_UNAVAILABLE" } });
  });

  it("answers an unknown route with 404 NOT_FOUND in the same body", async () => {
    const response = await gateway.app.inject({ method: "GET", url: "/no-such-route?token=secret", headers });
    expect(response.statusCode).toBe(404);
    expect(bodyOf(response)).toEqual({ error: { code: "NOT_FOUND", message: "No route GET /no-such-route" } });
  });
});
