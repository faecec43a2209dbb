import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { startHostileReceiver, type HostileBehaviour, type HostileReceiver } from "../../services/webhook-dispatcher/src/sending/hostile-receivers.fixture.js";
import { api, createOrg, repoRoot, startReceiver, waitFor } from "../helpers.js";

/**
 * The issue "Nothing a peer does can crash a service", for the webhook dispatcher as deployed: its own process,
 * talking to receivers over real sockets. undici 7 crashed the process on a receiver closing its socket while a body
 * was paused (nodejs/undici#5360); any such crash shows here as an exit of the dispatcher.
 */
describe("a hostile webhook receiver does not take the dispatcher down", () => {
  let system: RunningSystem;
  const exits: string[] = [];
  const hostile: HostileReceiver[] = [];

  beforeAll(async () => {
    const infra = testInfra();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("hostilehooks"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("hostilehooks"),
      env: {
        MODE: "test",
        WEBHOOK_RETRY_SCHEDULE_MS: "200,400",
        WEBHOOK_TIMEOUT_MS: "2000",
        PLANS_JSON: JSON.stringify({ starter: { requestsPerMinute: 100000 } }),
        IP_REQUESTS_PER_MINUTE: "1000000",
      },
      onExit: (service, how) => exits.push(`${service} exited (${how})`),
    });
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await Promise.all(hostile.map((receiver) => receiver.stop()));
  });

  async function orgWithWebhookAt(url: string) {
    const { orgId, key } = await createOrg(system.env, "starter", "Hostile hooks");
    const call = api(system.gatewayUrl, key);
    expect((await call("PATCH", `/orgs/${orgId}`, { webhookUrl: url, webhookSecret: `whsec_${orgId}` })).status).toBe(200);
    return call;
  }

  it("answers 1 GB bodies, resets and a body closed at once with failed or succeeded attempts, while a normal org's webhooks arrive and the dispatcher keeps its process", async () => {
    const dispatcherPid = system.pid("webhook-dispatcher");
    const behaviours: HostileBehaviour[] = ["huge-body-then-reset", "huge-body", "body-then-fin", "garbage"];
    const hostileOrgs = [];
    for (const behaviour of behaviours) {
      const receiver = await startHostileReceiver(behaviour);
      hostile.push(receiver);
      hostileOrgs.push({ behaviour, call: await orgWithWebhookAt(receiver.url) });
    }
    const normal = await startReceiver(() => 200);
    const normalCall = await orgWithWebhookAt(normal.url);

    const hostileJobs = [];
    for (const { behaviour, call } of hostileOrgs) {
      const job = (await call("POST", "/jobs", { type: "qr.generate", params: { content: behaviour } })).body.data;
      hostileJobs.push({ behaviour, call, jobId: job.id as string });
    }
    const normalJob = (await normalCall("POST", "/jobs", { type: "qr.generate", params: { content: "normal" } })).body.data;

    const arrived = await waitFor(
      () => normal.received.find((hook) => hook.headers["x-renderbus-event"] === "job.completed" && JSON.parse(hook.rawBody.toString()).jobId === normalJob.id),
      { timeoutMs: 60_000, what: "the normal org's job.completed" },
    );
    expect(arrived).toBeDefined();

    const expected: Record<string, { status: string; lastResponseStatus: number | null; attempts: number }> = {
      "huge-body-then-reset": { status: "failed", lastResponseStatus: 500, attempts: 3 },
      garbage: { status: "failed", lastResponseStatus: null, attempts: 3 },
      "huge-body": { status: "succeeded", lastResponseStatus: 200, attempts: 1 },
      "body-then-fin": { status: "succeeded", lastResponseStatus: 200, attempts: 1 },
    };
    for (const { behaviour, call, jobId } of hostileJobs) {
      const delivery = await waitFor(
        async () => {
          const page = (await call("GET", `/webhooks/deliveries?jobId=${jobId}&event=job.completed`)).body.data;
          return page[0] && page[0].status !== "pending" ? page[0] : undefined;
        },
        { timeoutMs: 60_000, what: `the ${behaviour} delivery to end` },
      );
      expect({ behaviour, status: delivery.status, lastResponseStatus: delivery.lastResponseStatus ?? null, attempts: delivery.attempts }).toEqual({ behaviour, ...expected[behaviour] });
    }

    // Still the same process, and it still delivers.
    expect(exits).toEqual([]);
    expect(system.pid("webhook-dispatcher")).toBe(dispatcherPid);
    const after = (await normalCall("POST", "/webhooks/test")).body.data;
    expect(after.succeeded).toBe(true);
    await normal.close();
  });
});
