import Fastify, { type FastifyInstance } from "fastify";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Bus } from "@renderbus/bus";
import type { auth, webhooks } from "@renderbus/contracts";
import { newId } from "@renderbus/ids";
import { loadPlans } from "@renderbus/plans";
import type { PromiseClient } from "@renderbus/rpc";
import { createLogger, createMetricsRegistry } from "@renderbus/telemetry";
import { testInfra, testNamespace } from "@renderbus/testing";
import { gatewayConfigSchema } from "../config.js";
import type { GatewayDeps } from "../deps.js";
import { CredentialResolver } from "../auth/credential-resolver.js";
import { RateLimiter } from "../auth/rate-limiter.js";
import { JobEventHub } from "./job-event-hub.js";
import { registerWebhookEventStream, type StreamedWebhook } from "./webhook-events.js";

const PLANS_JSON = JSON.stringify({ starter: { requestsPerMinute: 100_000 } });

/**
 * `GET /webhooks/events/stream` over real NATS and Redis: the dispatcher announces many orgs' deliveries in one
 * DeliveriesUpdated, and each org's stream must get its own test deliveries from it and nothing of another org's.
 * The auth service's answer is fixed per key (the credential is not what is under test here).
 */
describe("webhook event stream with batched delivery announcements", () => {
  const orgs = { a: `org_${newId("org").slice(4)}a`, b: `org_${newId("org").slice(4)}b` };
  const keys = { a: `rb_${"a".repeat(43)}`, b: `rb_${"b".repeat(43)}` };
  let app: FastifyInstance;
  let bus: Bus;
  let redis: Redis;
  let baseUrl: string;

  beforeAll(async () => {
    const infra = testInfra();
    bus = await Bus.connect({ url: infra.natsUrl, name: "sse-webhooks-test", namespace: testNamespace("ssewh") });
    redis = new Redis(infra.redisUrl);
    const authClient = {
      resolveApiKey: async ({ key }: { key: string }) => {
        const which = key === keys.a ? "a" : "b";
        return { userId: `usr_${which}`, orgId: orgs[which], plan: "starter", role: "admin", credential: "api_key", apiKeyId: `key_${which}` };
      },
    } as unknown as PromiseClient<auth.AuthClient>;
    const deps = {
      config: gatewayConfigSchema.parse({ REDIS_URL: infra.redisUrl, NATS_URL: infra.natsUrl, PLANS_JSON }),
      logger: createLogger({ service: "gateway-test", level: "silent" }),
      plans: loadPlans(PLANS_JSON),
      bus,
      redis,
      credentials: new CredentialResolver({ auth: authClient, ttlMs: 0 }),
      rateLimiter: new RateLimiter(redis),
      jobEvents: new JobEventHub(bus),
      metrics: createMetricsRegistry("gateway-test"),
    } as unknown as GatewayDeps;
    app = Fastify();
    registerWebhookEventStream(app, deps);
    await app.listen({ port: 0, host: "127.0.0.1" });
    baseUrl = `http://127.0.0.1:${(app.server.address() as { port: number }).port}`;
  });

  afterAll(async () => {
    await app?.close();
    redis?.disconnect();
    await bus?.close();
  });

  /** Opens a stream and collects its `webhook` events; resolves once the server said its subscriptions are ready. */
  async function openStream(key: string) {
    const controller = new AbortController();
    const response = await fetch(`${baseUrl}/webhooks/events/stream`, { headers: { authorization: `Bearer ${key}` }, signal: controller.signal });
    expect(response.status).toBe(200);
    const received: StreamedWebhook[] = [];
    let ready!: () => void;
    const readyNow = new Promise<void>((done) => (ready = done));
    void (async () => {
      const decoder = new TextDecoder();
      let buffer = "";
      for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
        buffer += decoder.decode(chunk, { stream: true });
        for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
          const frame = buffer.slice(0, end);
          buffer = buffer.slice(end + 2);
          const event = /^event: (.*)$/m.exec(frame)?.[1];
          const data = /^data: (.*)$/m.exec(frame)?.[1];
          if (event === "ready") ready();
          if (event === "webhook" && data) received.push(JSON.parse(data) as StreamedWebhook);
        }
      }
    })().catch(() => undefined);
    await readyNow;
    return { received, close: () => controller.abort() };
  }

  const test = (deliveryId: string, orgId: string): webhooks.DeliveryUpdated => ({ deliveryId, orgId, event: "webhook.test", status: "pending", attempts: 0, occurredAt: 7_000, trace: {} });

  async function until(done: () => boolean, what: string) {
    for (const deadline = Date.now() + 5_000; !done(); ) {
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  }

  it("sends each org only its own updates of a batch that mixes two orgs, and still takes lone updates", async () => {
    const [a, b] = [await openStream(keys.a), await openStream(keys.b)];
    bus.notify("webhooks.events.deliveries.updated", { updates: [test("del_a1", orgs.a), test("del_b1", orgs.b), test("del_a2", orgs.a)] } satisfies webhooks.DeliveriesUpdated);
    // An older dispatcher's lone announcement, then a last batch each stream waits for.
    bus.notify("webhooks.events.delivery.updated", test("del_b2", orgs.b));
    bus.notify("webhooks.events.deliveries.updated", { updates: [test("del_b3", orgs.b), test("del_a3", orgs.a)] } satisfies webhooks.DeliveriesUpdated);
    await until(() => a.received.some((hook) => hook.id === "del_a3") && b.received.some((hook) => hook.id === "del_b3"), "the last batch on both streams");

    expect(a.received.map((hook) => hook.id)).toEqual(["del_a1", "del_a2", "del_a3"]);
    expect(b.received.map((hook) => hook.id)).toEqual(["del_b1", "del_b2", "del_b3"]);
    expect(JSON.parse(b.received[0]!.body)).toMatchObject({ event: "webhook.test" });
    a.close();
    b.close();
  });
});
