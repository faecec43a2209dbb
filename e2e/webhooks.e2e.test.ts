import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { api, createOrg, repoRoot, startReceiver, waitFor } from "./helpers.js";

const sign = (body: Buffer, secret: string) => `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;

describe("webhooks end to end: signed deliveries, retries, the delivery log and batch.completed", () => {
  let system: RunningSystem;

  beforeAll(async () => {
    const infra = testInfra();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("hookse2e"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("hookse2e"),
      env: {
        MODE: "test",
        WEBHOOK_RETRY_SCHEDULE_MS: "100,200,400",
        WEBHOOK_TIMEOUT_MS: "2000",
        // Finished jobs stay cached far longer than these tests run: every delivery change GET /jobs/{id} shows
        // below must come from the gateway dropping the job on `webhooks.events.deliveries.updated`.
        JOB_CACHE_TTL_MS: "600000",
        PLANS_JSON: JSON.stringify({ starter: { requestsPerMinute: 100000 } }),
        IP_REQUESTS_PER_MINUTE: "1000000",
      },
    });
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
  });

  async function orgWithWebhook(respond: (index: number) => number) {
    const { orgId, key } = await createOrg(system.env, "starter", "Hooks");
    const receiver = await startReceiver(respond);
    const secret = `whsec_${orgId}`;
    const call = api(system.gatewayUrl, key);
    const patched = await call("PATCH", `/orgs/${orgId}`, { webhookUrl: receiver.url, webhookSecret: secret });
    expect(patched.status).toBe(200);
    return { orgId, key, call, receiver, secret };
  }

  it("signs job.running, job.completed and one batch.completed for a batch; GET /jobs/{id} shows the deliveries", async () => {
    const { call, receiver, secret } = await orgWithWebhook(() => 200);
    const batch = await call("POST", "/batches", {
      jobs: [1, 2, 3].map((n) => ({ type: "qr.generate", params: { content: `item ${n}` } })),
    });
    expect(batch.status).toBe(201);
    const done = await waitFor(() => receiver.received.find((hook) => hook.headers["x-renderbus-event"] === "batch.completed"), { timeoutMs: 60_000, what: "batch.completed" });
    const body = JSON.parse(done.rawBody.toString());
    expect(body).toMatchObject({ event: "batch.completed", batchId: batch.body.data.id, jobCount: 3, counts: { completed: 3, failed: 0, cancelled: 0 } });
    for (const hook of receiver.received) {
      expect(hook.headers["x-renderbus-signature"]).toBe(sign(hook.rawBody, secret));
      expect(hook.headers["user-agent"]).toMatch(/^Renderbus-Webhooks\//);
    }
    const events = receiver.received.map((hook) => hook.headers["x-renderbus-event"]);
    expect(events.filter((event) => event === "job.completed")).toHaveLength(3);
    expect(events.filter((event) => event === "job.running")).toHaveLength(3);
    expect(events.filter((event) => event === "batch.completed")).toHaveLength(1);

    const jobId = batch.body.data.jobIds[0];
    const job = await waitFor(async () => {
      const data = (await call("GET", `/jobs/${jobId}`)).body.data;
      return data.webhookDeliveries.length >= 2 && data.webhookDeliveries.every((d: { status: string }) => d.status === "succeeded") ? data : undefined;
    }, { what: "deliveries projected onto the job" });
    expect(job.webhookDeliveries.map((d: { event: string }) => d.event).sort()).toEqual(["job.completed", "job.running"]);
    expect(job.webhookDeliveries[0]).toMatchObject({ attempts: 1, lastResponseStatus: 200, id: expect.stringMatching(/^del_/) });
    await receiver.close();
  });

  it("retries a failing receiver 4 times with one delivery id, marks it failed, shows it everywhere, and retries by hand", async () => {
    let healthy = false;
    const { call, receiver } = await orgWithWebhook(() => (healthy ? 200 : 500));
    const job = (await call("POST", "/jobs", { type: "qr.generate", params: { content: "retry me" } })).body.data;
    // Read the finished job while its deliveries are still being retried: the gateway caches it now.
    await waitFor(async () => ((await call("GET", `/jobs/${job.id}`)).body.data.status === "completed" ? true : undefined), { what: "the job to complete" });

    const failed = await waitFor(async () => {
      const page = (await call("GET", `/webhooks/deliveries?jobId=${job.id}&event=job.completed`)).body.data;
      return page[0]?.status === "failed" ? page[0] : undefined;
    }, { timeoutMs: 30_000, what: "the delivery to be marked failed" });
    expect(failed.attempts).toBe(4);
    expect(failed.lastResponseStatus).toBe(500);
    const attempts = receiver.received.filter((hook) => hook.headers["x-renderbus-delivery"] === failed.id);
    expect(attempts.map((hook) => hook.headers["x-renderbus-attempt"])).toEqual(["1", "2", "3", "4"]);

    const onJob = await waitFor(async () => {
      const data = (await call("GET", `/jobs/${job.id}`)).body.data;
      const delivery = data.webhookDeliveries.find((d: { id: string }) => d.id === failed.id);
      return delivery?.status === "failed" ? delivery : undefined;
    }, { what: "the failed delivery on the job" });
    expect(onJob.attempts).toBe(4);

    healthy = true;
    const retried = await call("POST", `/webhooks/deliveries/${failed.id}/retry`);
    expect(retried.status).toBe(200);
    await waitFor(async () => {
      const page = (await call("GET", `/webhooks/deliveries?jobId=${job.id}&event=job.completed`)).body.data;
      return page[0]?.status === "succeeded" ? true : undefined;
    }, { what: "the manual retry to succeed" });
    const last = receiver.received.filter((hook) => hook.headers["x-renderbus-delivery"] === failed.id).at(-1)!;
    expect(last.headers["x-renderbus-attempt"]).toBe("5");
    await receiver.close();
  });

  it("sends a signed webhook.test on demand and reports the outcome; free orgs get PLAN_LIMIT", async () => {
    const { call, receiver, secret } = await orgWithWebhook(() => 204);
    const test = await call("POST", "/webhooks/test");
    expect(test.status).toBe(200);
    expect(test.body.data.succeeded).toBe(true);
    const hook = receiver.received.find((h) => h.headers["x-renderbus-event"] === "webhook.test")!;
    expect(hook.headers["x-renderbus-signature"]).toBe(sign(hook.rawBody, secret));
    await receiver.close();

    const free = await createOrg(system.env, "free", "Free hooks");
    const refused = await api(system.gatewayUrl, free.key)("POST", "/webhooks/test");
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe("PLAN_LIMIT");
  });

  it("sends no webhook for a cancelled job", async () => {
    const { call, receiver } = await orgWithWebhook(() => 200);
    // Fill the org's 5 slots with jobs so the sixth waits, then cancel it while waiting.
    const jobs = await Promise.all(Array.from({ length: 6 }, (_, n) => call("POST", "/jobs", { type: "qr.generate", params: { content: `c${n}`, size: 4096 } })));
    const last = jobs.at(-1)!.body.data;
    const cancel = await call("POST", `/jobs/${last.id}/cancel`);
    expect([200, 409]).toContain(cancel.status);
    if (cancel.status === 200) {
      await waitFor(() => (receiver.received.filter((h) => h.headers["x-renderbus-event"] === "job.completed").length >= 5 ? true : undefined), { timeoutMs: 60_000, what: "the other jobs" });
      await new Promise((done) => setTimeout(done, 500));
      expect(receiver.received.some((hook) => JSON.parse(hook.rawBody.toString()).jobId === last.id)).toBe(false);
    }
    await receiver.close();
  });
});
