import { createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { api, createOrg, repoRoot, startReceiver, waitFor, type ReceivedWebhook } from "./helpers.js";

const sign = (body: Buffer, secret: string) => `sha256=${createHmac("sha256", secret).update(body).digest("hex")}`;
const eventOf = (hook: ReceivedWebhook) => hook.headers["x-renderbus-event"];
/** A whsec_ secret is the package's own form; any other secret keys the HMAC with its UTF-8 bytes (docs/webhooks.md). */
const standardVerify = (secret: string, hook: ReceivedWebhook) =>
  (secret.startsWith("whsec_") ? new Webhook(secret) : new Webhook(new TextEncoder().encode(secret), { format: "raw" })).verify(
    hook.rawBody.toString("utf8"),
    hook.headers as Record<string, string>,
  );

describe("webhook endpoints end to end: filters per endpoint, the default endpoint, rotation", () => {
  let system: RunningSystem;

  beforeAll(async () => {
    const infra = testInfra();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("endpointse2e"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("endpointse2e"),
      env: {
        MODE: "test",
        WEBHOOK_RETRY_SCHEDULE_MS: "100,200,400",
        WEBHOOK_TIMEOUT_MS: "2000",
        PLANS_JSON: JSON.stringify({ starter: { requestsPerMinute: 100000 } }),
        IP_REQUESTS_PER_MINUTE: "1000000",
      },
    });
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
  });

  it("delivers each event only to the endpoints whose filter matches, signed with each endpoint's own secret", async () => {
    const { orgId, key } = await createOrg(system.env, "starter", "Endpoints");
    const call = api(system.gatewayUrl, key);
    const seedReceiver = await startReceiver();
    const completedReceiver = await startReceiver();
    const runningReceiver = await startReceiver();
    const seedSecret = `seed-secret-${orgId}`;
    expect((await call("PATCH", `/orgs/${orgId}`, { webhookUrl: seedReceiver.url, webhookSecret: seedSecret })).status).toBe(200);

    const completed = await call("POST", "/webhooks/endpoints", { url: completedReceiver.url, events: ["job.completed"], description: "completions" });
    expect(completed.status).toBe(201);
    expect(completed.body.data).toMatchObject({ id: expect.stringMatching(/^ep_/), url: completedReceiver.url, events: ["job.completed"], enabled: true, secretSet: true });
    const completedSecret: string = completed.body.data.secret;
    expect(completedSecret).toMatch(/^whsec_/);
    const running = await call("POST", "/webhooks/endpoints", { url: runningReceiver.url, events: ["job.running"], secret: "my-own-running-secret" });
    expect(running.status).toBe(201);

    const list = await call("GET", "/webhooks/endpoints");
    expect(list.status).toBe(200);
    expect(list.body.data.map((endpoint: { id: string; url: string }) => [endpoint.id, endpoint.url])).toEqual([
      ["ep_default", seedReceiver.url],
      [completed.body.data.id, completedReceiver.url],
      [running.body.data.id, runningReceiver.url],
    ]);
    expect(JSON.stringify(list.body)).not.toContain(completedSecret);
    expect((await call("GET", `/webhooks/endpoints/${completed.body.data.id}`)).body.data).not.toHaveProperty("secret");

    const job = (await call("POST", "/jobs", { type: "qr.generate", params: { content: "endpoints" } })).body.data;
    await waitFor(() => (seedReceiver.received.length >= 2 ? true : undefined), { timeoutMs: 60_000, what: "the default endpoint's two deliveries" });
    await waitFor(() => (completedReceiver.received.length >= 1 && runningReceiver.received.length >= 1 ? true : undefined), { timeoutMs: 60_000, what: "the filtered endpoints' deliveries" });
    // Every delivery of the job is on the job record: two for the default endpoint, one for each filtered one.
    const record = await waitFor(async () => {
      const data = (await call("GET", `/jobs/${job.id}`)).body.data;
      return data.webhookDeliveries.length === 4 && data.webhookDeliveries.every((d: { status: string }) => d.status === "succeeded") ? data : undefined;
    }, { timeoutMs: 30_000, what: "four deliveries on the job" });
    expect(new Set(record.webhookDeliveries.map((d: { id: string }) => d.id)).size).toBe(4);

    expect(seedReceiver.received.map(eventOf).sort()).toEqual(["job.completed", "job.running"]);
    expect(completedReceiver.received.map(eventOf)).toEqual(["job.completed"]);
    expect(runningReceiver.received.map(eventOf)).toEqual(["job.running"]);
    for (const hook of seedReceiver.received) expect(hook.headers["x-renderbus-signature"]).toBe(sign(hook.rawBody, seedSecret));
    // The generated whsec_ secret verifies with the published Standard Webhooks package.
    expect(standardVerify(completedSecret, completedReceiver.received[0]!)).toMatchObject({ event: "job.completed", jobId: job.id });
    expect(runningReceiver.received[0]!.headers["x-renderbus-signature"]).toBe(sign(runningReceiver.received[0]!.rawBody, "my-own-running-secret"));

    const log = await call("GET", "/webhooks/deliveries?limit=10");
    expect(log.body.data.map((delivery: { endpointId: string }) => delivery.endpointId).sort()).toEqual(
      ["ep_default", "ep_default", completed.body.data.id, running.body.data.id].sort(),
    );
    await Promise.all([seedReceiver.close(), completedReceiver.close(), runningReceiver.close()]);
  });

  it("treats the org's webhookUrl and ep_default as one: a change through either API shows in both, and a rotation signs with both secrets", async () => {
    const { orgId, key } = await createOrg(system.env, "starter", "Default endpoint");
    const call = api(system.gatewayUrl, key);
    const first = await startReceiver();
    const second = await startReceiver();
    expect((await call("GET", "/webhooks/endpoints/ep_default")).status).toBe(404);
    await call("PATCH", `/orgs/${orgId}`, { webhookUrl: first.url, webhookSecret: "first-secret-123" });
    expect((await call("GET", "/webhooks/endpoints/ep_default")).body.data).toMatchObject({ id: "ep_default", url: first.url, secretSet: true });

    const moved = await call("PATCH", "/webhooks/endpoints/ep_default", { url: second.url, events: ["job.completed"] });
    expect(moved.status).toBe(200);
    expect(moved.body.data).toMatchObject({ url: second.url, events: ["job.completed"] });
    expect((await call("GET", "/orgs/current")).body.data.webhookUrl).toBe(second.url);

    const rotated = await call("POST", "/webhooks/endpoints/ep_default/rotate-secret", { graceSeconds: 600 });
    expect(rotated.status).toBe(200);
    const newSecret: string = rotated.body.data.secret;
    expect(newSecret).toMatch(/^whsec_/);
    expect(rotated.body.data.previousSecretExpiresAt).toBeGreaterThan(Date.now());

    await call("POST", "/jobs", { type: "qr.generate", params: { content: "rotated" } });
    const [hook] = await waitFor(() => (second.received.length >= 1 ? second.received : undefined), { timeoutMs: 60_000, what: "a delivery after the rotation" });
    expect(eventOf(hook!)).toBe("job.completed");
    expect(hook!.headers["x-renderbus-signature"]).toBe(sign(hook!.rawBody, newSecret));
    expect(String(hook!.headers["webhook-signature"]).split(" ")).toHaveLength(2);
    expect(standardVerify(newSecret, hook!)).toMatchObject({ event: "job.completed" });
    expect(standardVerify("first-secret-123", hook!)).toMatchObject({ event: "job.completed" });
    expect(first.received).toHaveLength(0);

    expect((await call("DELETE", "/webhooks/endpoints/ep_default")).status).toBe(200);
    expect((await call("GET", "/orgs/current")).body.data).toMatchObject({ webhookUrl: null, webhookSecretSet: false });
    await Promise.all([first.close(), second.close()]);
  });

  it("rotates with 24 h of grace by default, and answers a second recover within the interval 429 with Retry-After", async () => {
    const { key } = await createOrg(system.env, "starter", "Recover twice");
    const call = api(system.gatewayUrl, key);
    const endpoint = (await call("POST", "/webhooks/endpoints", { url: "https://example.com/hook", events: ["*"] })).body.data;
    const before = Date.now();
    const rotated = await call("POST", `/webhooks/endpoints/${endpoint.id}/rotate-secret`, {});
    expect(rotated.status).toBe(200);
    expect(rotated.body.data.previousSecretExpiresAt).toBeGreaterThanOrEqual(before + 86_400_000);
    expect(rotated.body.data.previousSecretExpiresAt).toBeLessThanOrEqual(Date.now() + 86_400_000);

    expect((await call("POST", `/webhooks/endpoints/${endpoint.id}/recover`, { since: 0 })).status).toBe(200);
    const again = await call("POST", `/webhooks/endpoints/${endpoint.id}/recover`, { since: 0 });
    expect(again.status).toBe(429);
    expect(again.body.error.code).toBe("RATE_LIMITED");
    // The dispatcher refused it; its wait crosses gRPC to the gateway's answer.
    expect(Number(again.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
  });

  it("refuses endpoints to free orgs and unknown fields", async () => {
    const { key } = await createOrg(system.env, "free", "Free endpoints");
    const call = api(system.gatewayUrl, key);
    expect((await call("POST", "/webhooks/endpoints", { url: "https://example.com/hook", events: ["*"] })).body.error.code).toBe("PLAN_LIMIT");
    const { key: starterKey } = await createOrg(system.env, "starter", "Strict endpoints");
    const starter = api(system.gatewayUrl, starterKey);
    expect((await starter("POST", "/webhooks/endpoints", { url: "https://example.com/hook", events: ["*"], colour: "blue" })).status).toBe(400);
    expect((await starter("POST", "/webhooks/endpoints", { url: "https://example.com/hook", events: ["job.exploded"] })).status).toBe(400);
  });
});
