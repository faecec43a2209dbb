import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { jobs } from "@renderbus/contracts";
import { authContextOf, bodyOf, gatewayWithFakes, newApiKey, type GatewayWithFakes } from "../http/gateway-with-fakes.test-support.js";

/**
 * `GET /jobs/{id}/wait` (MCP wait_for_job) in process over a fake jobs service: its limits, its answer, and that a
 * held wait never holds the gateway's shutdown.
 */
const KEY = newApiKey();
const headers = { authorization: `Bearer ${KEY}` };
const job = (id: string, status: string) =>
  ({ id, orgId: "org_1", type: "transcode", status, inputs: {}, params: {}, metadata: {}, webhookDeliveries: [], timing: { createdAt: 1 } }) as unknown as jobs.Job;

let gateway: GatewayWithFakes;
beforeAll(async () => {
  gateway = await gatewayWithFakes(
    {
      auth: { resolveApiKey: async () => authContextOf({ plan: "scale" }) },
      jobs: { getJob: async ({ jobId }) => job(jobId, jobId === "job_done" ? "completed" : "running") },
    },
    { IP_REQUESTS_PER_MINUTE: "100000" },
  );
});
afterAll(() => gateway?.close());

describe("GET /jobs/{id}/wait", () => {
  it("answers a finished job at once, and an unfinished one when timeoutSeconds is up, as GET /jobs/{id} does", async () => {
    const done = await gateway.app.inject({ method: "GET", url: "/jobs/job_done/wait", headers });
    expect(done.statusCode).toBe(200);
    const got = await gateway.app.inject({ method: "GET", url: "/jobs/job_done", headers });
    expect(bodyOf(done)).toEqual(bodyOf(got));
    const running = await gateway.app.inject({ method: "GET", url: "/jobs/job_1/wait?timeoutSeconds=0", headers });
    expect(bodyOf(running)).toMatchObject({ data: { id: "job_1", status: "running" } });
  });

  it.each(["61", "-1", "1.5", "soon"])("refuses timeoutSeconds=%s with VALIDATION_ERROR", async (value) => {
    const response = await gateway.app.inject({ method: "GET", url: `/jobs/job_1/wait?timeoutSeconds=${value}`, headers });
    expect(response.statusCode).toBe(400);
    expect(bodyOf(response)).toMatchObject({ error: { code: "VALIDATION_ERROR", message: expect.stringContaining("timeoutSeconds") } });
  });

  it("holds at most HELD_WAITS_PER_ORG waits of an org at once: one more is answered at once with the job as it is, another org's is held", async () => {
    const orgOf: Record<string, string> = { [KEY]: "org_1" };
    const otherKey = newApiKey();
    orgOf[otherKey] = "org_2";
    const waits = await gatewayWithFakes(
      { auth: { resolveApiKey: async ({ key }) => authContextOf({ plan: "scale", orgId: orgOf[key] }) }, jobs: { getJob: async ({ jobId }) => job(jobId, "running") } },
      { IP_REQUESTS_PER_MINUTE: "100000", HELD_WAITS_PER_ORG: "2" },
    );
    try {
      await waits.app.listen({ port: 0, host: "127.0.0.1" });
      const { port } = waits.app.server.address() as { port: number };
      const wait = (key: string, seconds: number, signal?: AbortSignal) =>
        fetch(`http://127.0.0.1:${port}/jobs/job_1/wait?timeoutSeconds=${seconds}`, { headers: { authorization: `Bearer ${key}` }, ...(signal ? { signal } : {}) });
      const leaving = new AbortController();
      const held = [wait(KEY, 60, leaving.signal), wait(KEY, 60, leaving.signal)].map((response) => response.catch(() => "left"));
      let heldAnswered = false;
      void Promise.race(held).then(() => (heldAnswered = true));
      while (waits.deps.jobEvents.watcherCount < 2) await new Promise((resolve) => setTimeout(resolve, 20));
      // The third asks for 60 s too, and is answered while the first two are still held.
      const third = await wait(KEY, 60);
      expect(heldAnswered).toBe(false);
      expect(await third.json()).toMatchObject({ data: { id: "job_1", status: "running" } });
      // Another org has its own waits.
      const other = wait(otherKey, 60);
      while (waits.deps.jobEvents.watcherCount < 3) await new Promise((resolve) => setTimeout(resolve, 20));
      // Clients that leave give their places back.
      leaving.abort();
      await Promise.all(held);
      await expect.poll(async () => {
        const started = Date.now();
        await (await wait(KEY, 1)).json();
        return Date.now() - started;
      }, { timeout: 10_000 }).toBeGreaterThanOrEqual(900);
      await waits.close();
      expect((await other).status).toBe(200);
    } finally {
      await waits.close();
    }
  }, 30_000);

  it("answers a held wait with the job as it is when the gateway closes, so shutdown does not wait 60 s", async () => {
    const waits = await gatewayWithFakes(
      { auth: { resolveApiKey: async () => authContextOf({ plan: "scale" }) }, jobs: { getJob: async ({ jobId }) => job(jobId, "running") } },
      { IP_REQUESTS_PER_MINUTE: "100000" },
    );
    await waits.app.listen({ port: 0, host: "127.0.0.1" });
    const { port } = waits.app.server.address() as { port: number };
    const held = fetch(`http://127.0.0.1:${port}/jobs/job_1/wait?timeoutSeconds=60`, { headers });
    // The wait is held once it listens for the job's events.
    while (waits.deps.jobEvents.watcherCount === 0) await new Promise((resolve) => setTimeout(resolve, 20));
    await waits.close();
    const response = await held;
    expect(response.status).toBe(200);
    expect(await response.json()).toMatchObject({ data: { id: "job_1", status: "running" } });
  }, 30_000);
});
