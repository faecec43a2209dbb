import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { createOrg, repoRoot, startReceiver, waitFor } from "../../../e2e/helpers.js";
import { RenderbusClient, RenderbusError, verifyWebhook, type Job } from "../src/index.js";

describe("SDK against the running system: submit, paginate, wait, verify a real webhook", () => {
  let system: RunningSystem;

  beforeAll(async () => {
    const infra = testInfra();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("sdke2e"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("sdke2e"),
      env: { MODE: "test", IP_REQUESTS_PER_MINUTE: "1000000", PLANS_JSON: JSON.stringify({ starter: { requestsPerMinute: 100000 } }) },
    });
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
  });

  it("submits jobs, pages through them, waits for one and verifies its signed job.completed delivery", async () => {
    const { orgId, key } = await createOrg(system.env, "starter", "SDK");
    const client = new RenderbusClient({ apiKey: key, baseUrl: system.gatewayUrl });
    const receiver = await startReceiver();
    const secret = `whsec_sdk_${orgId}`;
    await client.orgs.updateWebhook(orgId, { webhookUrl: receiver.url, webhookSecret: secret });

    const submitted: Job[] = [];
    for (const n of [1, 2, 3]) submitted.push(await client.jobs.submit({ type: "qr.generate", params: { content: `sdk ${n}` }, metadata: { n } }));
    expect(submitted.map((job) => job.status)).toEqual(["waiting", "waiting", "waiting"]);

    const updates: string[] = [];
    const done = await client.waitForJob(submitted[0]!.id, { timeoutMs: 90_000, onUpdate: (job) => updates.push(job.status) });
    expect(done).toMatchObject({ id: submitted[0]!.id, status: "completed", metadata: { n: 1 }, cost: { credits: expect.any(Number) } });
    expect(done.result?.url).toMatch(/^http/);
    expect(updates.at(-1)).toBe("completed");
    for (const job of submitted.slice(1)) expect((await client.jobs.wait(job.id, { timeoutMs: 90_000 })).status).toBe("completed");

    const listed: string[] = [];
    for await (const job of client.jobs.list({ limit: 2 })) listed.push(job.id);
    expect(listed).toEqual(submitted.map((job) => job.id).reverse());
    expect((await client.jobs.list({ status: "completed", limit: 1 }).toArray()).length).toBe(3);

    const hook = await waitFor(
      () => receiver.received.find((received) => received.headers["x-renderbus-event"] === "job.completed" && received.rawBody.includes(done.id)),
      { timeoutMs: 60_000, what: "job.completed delivery" },
    );
    expect(verifyWebhook(hook.rawBody, hook.headers, secret)).toBe(true);
    expect(verifyWebhook(hook.rawBody, hook.headers, "whsec_wrong")).toBe(false);
    // A real delivery carries both signatures, and each verifies on its own.
    expect(verifyWebhook(hook.rawBody, hook.headers, secret, { scheme: "standard" })).toBe(true);
    expect(verifyWebhook(hook.rawBody, hook.headers, secret, { scheme: "seed" })).toBe(true);
    expect(JSON.parse(hook.rawBody.toString())).toMatchObject({ event: "job.completed", jobId: done.id });

    const missing = await client.jobs.get("job_01J00000000000000000000000").catch((error: unknown) => error);
    expect(missing).toBeInstanceOf(RenderbusError);
    expect(missing).toMatchObject({ code: "NOT_FOUND", status: 404, requestId: expect.any(String) });
    await receiver.close();
  }, 180_000);
});
