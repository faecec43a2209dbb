import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STREAMS, type ConsumerHandle } from "@renderbus/bus";
import type { webhooks } from "@renderbus/contracts";
import { createDatabase, type Database } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import { verifySignature } from "@renderbus/webhook-signing";
import type { DispatcherService } from "../service.js";
import { DISPATCHER_SCHEMA, type DispatcherTables } from "../database.js";
import { ENDPOINT_DISABLED_SUBJECT } from "./endpoint-health.js";
import { failingForWindow } from "./endpoint-store.js";
import {
  connectPublisher,
  eventually,
  jobCompletedEvent,
  startFakeAuth,
  startReceiver,
  startTestDispatcher,
  testConfig,
  webhooksClient,
  type ReceivedRequest,
  type ReceiverBehaviour,
} from "../testing/dispatcher-harness.js";

let fakeAuth: Awaited<ReturnType<typeof startFakeAuth>>;
let publisher: Awaited<ReturnType<typeof connectPublisher>>;
let dispatcher: DispatcherService;
let client: ReturnType<typeof webhooksClient>;
let database: Database<DispatcherTables>;
const receivers: { stop(): Promise<void> }[] = [];
/** Every `webhooks.events.endpoint.disabled` the dispatcher published (the auth service's durable, as it reads them). */
const disabledAnnouncements: { subject: string; data: webhooks.EndpointDisabled; msgId: string | undefined }[] = [];
let announcementsConsumer: ConsumerHandle | undefined;
const announcementsOf = (endpointId: string) => disabledAnnouncements.filter((announcement) => announcement.data.endpointId === endpointId);

const as = (orgId: string, plan = "pro", role = "admin") => ({ auth: { orgId, userId: "usr_test", plan, role } });
const headersOf = (request: ReceivedRequest) => request.headers as Record<string, string>;
const WHSEC = `whsec_${Buffer.from("0123456789abcdef0123456789abcdef").toString("base64")}`;

async function receiver(behave?: ReceiverBehaviour) {
  const started = await startReceiver(behave);
  receivers.push(started);
  return started;
}

/** An org on the pro plan whose webhookUrl (ep_default) points at a fresh receiver. */
async function orgWithDefault(secret = "default-secret") {
  const defaultReceiver = await receiver();
  const orgId = newId("org");
  fakeAuth.setTarget({ orgId, plan: "pro", url: defaultReceiver.url, secret });
  return { orgId, defaultReceiver };
}

const jobFailedEvent = (orgId: string, jobId = newId("job")) => ({
  jobId,
  orgId,
  error: { code: "PROVIDER_ERROR", message: "ffmpeg exited with 1" },
  timing: { createdAt: 1_700_000_000_000, startedAt: 1_700_000_001_000, completedAt: 1_700_000_002_000 },
});

beforeAll(async () => {
  const { natsUrl } = testInfra();
  const databaseUrl = await createTestDatabase("dispatcherendpoints");
  const namespace = testNamespace("endpoints");
  fakeAuth = await startFakeAuth();
  publisher = await connectPublisher(natsUrl, namespace);
  dispatcher = await startTestDispatcher(
    testConfig(
      { databaseUrl, natsUrl, namespace, authAddress: fakeAuth.address },
      {
        WEBHOOK_RETRY_SCHEDULE_MS: "300,300,300",
        WEBHOOK_EXTENDED_RETRY_SCHEDULE_MS: "300,300,300,300,300",
        WEBHOOK_TIMEOUT_MS: "2000",
        // Auto-disable after 3 failed deliveries, however recent: the window is covered by its own test of the query.
        WEBHOOK_DISABLE_AFTER: "1ms",
        WEBHOOK_DISABLE_MIN_FAILURES: "3",
        WEBHOOK_RECOVER_INTERVAL_MS: "60000",
      },
    ),
  );
  client = webhooksClient(dispatcher.grpcPort);
  announcementsConsumer = await publisher.bus.consume<webhooks.EndpointDisabled>({
    stream: STREAMS.webhookEvents,
    durable: "test-endpoint-alerts",
    filterSubjects: [ENDPOINT_DISABLED_SUBJECT],
    handler: async (message) => {
      disabledAnnouncements.push({ subject: message.subject, data: message.data, msgId: message.headers["Nats-Msg-Id"] });
    },
  });
  database = createDatabase<DispatcherTables>({ url: databaseUrl, schema: DISPATCHER_SCHEMA, maxConnections: 2 });
});

afterAll(async () => {
  await announcementsConsumer?.stop();
  await database?.close();
  client?.close();
  await dispatcher?.stop();
  await publisher?.close();
  await fakeAuth?.stop();
  await Promise.all(receivers.map((started) => started.stop()));
});

describe("webhook endpoints", () => {
  it("lists the org's webhookUrl as ep_default beside created endpoints, never with a secret", async () => {
    const { orgId, defaultReceiver } = await orgWithDefault();
    const other = await receiver();
    const created = await client.createEndpoint({ url: other.url, events: ["job.failed"], description: "failures" }, as(orgId));
    expect(created.secret).toMatch(/^whsec_[A-Za-z0-9+/]+={0,2}$/);
    expect(created.endpoint).toMatchObject({ url: other.url, events: ["job.failed"], enabled: true, ordering: "none", retrySchedule: "seed", secretSet: true });
    expect(created.endpoint!.id).toMatch(/^ep_/);

    const { endpoints } = await client.listEndpoints({}, as(orgId, "pro", "member"));
    expect(endpoints.map((endpoint) => [endpoint.id, endpoint.url])).toEqual([
      ["ep_default", defaultReceiver.url],
      [created.endpoint!.id, other.url],
    ]);
    expect(JSON.stringify(endpoints)).not.toContain(created.secret);
    expect(JSON.stringify(endpoints)).not.toContain("default-secret");
    expect(await client.getEndpoint({ endpointId: created.endpoint!.id }, as(orgId))).toMatchObject({ description: "failures" });
  });

  it("refuses bad fields, other orgs' endpoints, members, free plans and a 21st endpoint", async () => {
    const { orgId } = await orgWithDefault();
    await expect(client.createEndpoint({ url: "ftp://example.com/x", events: ["*"] }, as(orgId))).rejects.toMatchObject({ code: "VALIDATION_ERROR" });
    await expect(client.createEndpoint({ url: "https://example.com/x", events: ["job.exploded"] }, as(orgId))).rejects.toMatchObject({ code: "VALIDATION_ERROR" });
    await expect(client.createEndpoint({ url: "https://example.com/x", events: ["*"], ordering: "random" }, as(orgId))).rejects.toMatchObject({ code: "VALIDATION_ERROR" });
    await expect(client.createEndpoint({ url: "https://example.com/x", events: ["*"] }, as(orgId, "pro", "member"))).rejects.toMatchObject({ code: "FORBIDDEN" });
    const freeOrg = newId("org");
    fakeAuth.setTarget({ orgId: freeOrg, plan: "free" });
    await expect(client.createEndpoint({ url: "https://example.com/x", events: ["*"] }, as(freeOrg, "free"))).rejects.toMatchObject({ code: "PLAN_LIMIT" });

    const created = await client.createEndpoint({ url: "https://example.com/a", events: ["*"] }, as(orgId));
    const { orgId: otherOrg } = await orgWithDefault();
    await expect(client.getEndpoint({ endpointId: created.endpoint!.id }, as(otherOrg))).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(client.deleteEndpoint({ endpointId: created.endpoint!.id }, as(otherOrg))).rejects.toMatchObject({ code: "NOT_FOUND" });
    // 20 in all, the default one included: 18 more fit, the next is refused.
    for (let index = 0; index < 18; index += 1) await client.createEndpoint({ url: `https://example.com/${index}`, events: ["*"] }, as(orgId));
    await expect(client.createEndpoint({ url: "https://example.com/last", events: ["*"] }, as(orgId))).rejects.toMatchObject({ code: "CONFLICT" });
    await client.deleteEndpoint({ endpointId: created.endpoint!.id }, as(orgId));
    await expect(client.getEndpoint({ endpointId: created.endpoint!.id }, as(orgId))).rejects.toMatchObject({ code: "NOT_FOUND" });
    await client.createEndpoint({ url: "https://example.com/last", events: ["*"] }, as(orgId));
  });

  it("delivers each event once per matching endpoint, each with its own delivery id, signed with its own secret", async () => {
    const { orgId, defaultReceiver } = await orgWithDefault();
    const failuresOnly = await receiver();
    const everything = await receiver();
    const failures = await client.createEndpoint({ url: failuresOnly.url, events: ["job.failed"] }, as(orgId));
    const all = await client.createEndpoint({ url: everything.url, events: ["*"], secret: WHSEC }, as(orgId));
    const jobId = newId("job");

    await publisher.publish("job.completed", jobCompletedEvent(orgId, jobId));
    await publisher.publish("job.failed", jobFailedEvent(orgId));
    await defaultReceiver.waitFor(2);
    await everything.waitFor(2);
    await failuresOnly.waitFor(1);
    // Nothing more arrives for the endpoint that filters job.completed out.
    await eventually(async () => (await client.listDeliveries({ limit: 20 }, as(orgId))).deliveries.filter((delivery) => delivery.status === "succeeded").length === 5);
    expect(failuresOnly.received.map((request) => request.json.event)).toEqual(["job.failed"]);
    expect(everything.received.map((request) => request.json.event).sort()).toEqual(["job.completed", "job.failed"]);

    const { deliveries } = await client.listDeliveries({ limit: 20, jobId }, as(orgId));
    expect(deliveries.map((delivery) => delivery.endpointId).sort()).toEqual([all.endpoint!.id, "ep_default"].sort());
    expect(new Set(deliveries.map((delivery) => delivery.id)).size).toBe(2);

    // The seed's headers and signature are unchanged for the default endpoint; the others carry their own secret.
    const seed = defaultReceiver.received[0]!;
    expect(verifySignature(seed.rawBody, seed.headers["x-renderbus-signature"] as string, "default-secret")).toBe(true);
    const standard = everything.received[0]!;
    expect(() => new Webhook(WHSEC).verify(standard.rawBody.toString("utf8"), headersOf(standard))).not.toThrow();
    expect(verifySignature(standard.rawBody, standard.headers["x-renderbus-signature"] as string, WHSEC)).toBe(true);
    const generated = failuresOnly.received[0]!;
    expect(() => new Webhook(failures.secret).verify(generated.rawBody.toString("utf8"), headersOf(generated))).not.toThrow();

    // The list counts each endpoint's finished deliveries of the last 24 hours (the dashboard's success rate).
    const listed = await client.listEndpoints({}, as(orgId, "pro", "member"));
    expect(Object.fromEntries(listed.endpoints.map((endpoint) => [endpoint.id, endpoint.recent]))).toEqual({
      ep_default: { succeeded: 2, failed: 0 },
      [all.endpoint!.id]: { succeeded: 2, failed: 0 },
      [failures.endpoint!.id]: { succeeded: 1, failed: 0 },
    });
  });

  it("signs with both secrets during a rotation's grace period, the seed header with the new one, then only the new one", async () => {
    const { orgId } = await orgWithDefault();
    const target = await receiver();
    const created = await client.createEndpoint({ url: target.url, events: ["job.completed"], secret: WHSEC }, as(orgId));
    const endpointId = created.endpoint!.id;
    const rotated = await client.rotateEndpointSecret({ endpointId, graceSeconds: 3600 }, as(orgId));
    expect(rotated.secret).toMatch(/^whsec_/);
    expect(rotated.endpoint!.previousSecretExpiresAt).toBeGreaterThan(Date.now());

    await publisher.publish("job.completed", jobCompletedEvent(orgId));
    const [during] = await target.waitFor(1);
    expect(during!.headers["webhook-signature"]!.toString().split(" ")).toHaveLength(2);
    const body = during!.rawBody.toString("utf8");
    expect(() => new Webhook(WHSEC).verify(body, headersOf(during!))).not.toThrow();
    expect(() => new Webhook(rotated.secret).verify(body, headersOf(during!))).not.toThrow();
    expect(verifySignature(during!.rawBody, during!.headers["x-renderbus-signature"] as string, rotated.secret)).toBe(true);

    // A rotation without grace drops the old secret at once.
    const again = await client.rotateEndpointSecret({ endpointId, graceSeconds: 0 }, as(orgId));
    await publisher.publish("job.completed", jobCompletedEvent(orgId));
    const [, after] = await target.waitFor(2);
    expect(after!.headers["webhook-signature"]!.toString().split(" ")).toHaveLength(1);
    expect(() => new Webhook(again.secret).verify(after!.rawBody.toString("utf8"), headersOf(after!))).not.toThrow();
    expect(() => new Webhook(rotated.secret).verify(after!.rawBody.toString("utf8"), headersOf(after!))).toThrow();
  });

  it("waits as long as a 503's Retry-After asks before the next attempt, and counts the attempt", async () => {
    const { orgId } = await orgWithDefault();
    let calls = 0;
    const target = await receiver((_request, response) => {
      calls += 1;
      if (calls === 1) response.writeHead(503, { "retry-after": "3" }).end("busy");
      else response.writeHead(200).end("ok");
    });
    await client.createEndpoint({ url: target.url, events: ["job.completed"] }, as(orgId));
    await publisher.publish("job.completed", jobCompletedEvent(orgId));
    const [first, second] = await target.waitFor(2, 20_000);
    // The schedule's own delay is 300 ms; the receiver asked for 3 s.
    expect(second!.receivedAt - first!.receivedAt).toBeGreaterThanOrEqual(2900);
    expect(second!.headers["x-renderbus-attempt"]).toBe("2");
  });

  it("retries an endpoint on the extended schedule as many times as it has delays, the others on the seed's", async () => {
    const { orgId } = await orgWithDefault();
    const failing = () => receiver((_request, response) => response.writeHead(500).end("down"));
    const [extended, seed] = [await failing(), await failing()];
    const extendedEndpoint = await client.createEndpoint({ url: extended.url, events: ["job.completed"], retrySchedule: "extended" }, as(orgId));
    await client.createEndpoint({ url: seed.url, events: ["job.completed"] }, as(orgId));
    expect(extendedEndpoint.endpoint!.retrySchedule).toBe("extended");
    await publisher.publish("job.completed", jobCompletedEvent(orgId));
    await extended.waitFor(6, 20_000);
    await seed.waitFor(4, 20_000);
    const failed = await eventually(async () => {
      const { deliveries } = await client.listDeliveries({ limit: 10, status: "failed" }, as(orgId));
      return deliveries.length === 2 && deliveries;
    });
    expect(failed.map((delivery) => [delivery.endpointId === extendedEndpoint.endpoint!.id ? "extended" : "seed", delivery.attempts]).sort()).toEqual([
      ["extended", 6],
      ["seed", 4],
    ]);
    expect(extended.received.map((request) => request.headers["x-renderbus-attempt"])).toEqual(["1", "2", "3", "4", "5", "6"]);
    expect(seed.received).toHaveLength(4);
  });

  it("disables an endpoint answering 410 at once, tells the endpoints subscribed to endpoint.disabled, and stores later deliveries as skipped", async () => {
    const { orgId, defaultReceiver } = await orgWithDefault();
    const gone = await receiver((_request, response) => response.writeHead(410).end("gone"));
    const watcher = await receiver();
    const goneEndpoint = await client.createEndpoint({ url: gone.url, events: ["job.completed"] }, as(orgId));
    await client.createEndpoint({ url: watcher.url, events: ["endpoint.disabled"] }, as(orgId));

    await publisher.publish("job.completed", jobCompletedEvent(orgId));
    await gone.waitFor(1);
    const endpoint = await eventually(async () => {
      const current = await client.getEndpoint({ endpointId: goneEndpoint.endpoint!.id }, as(orgId));
      return !current.enabled && current;
    });
    expect(endpoint.disabledReason).toContain("410");
    const [notice] = await watcher.waitFor(1);
    expect(notice!.json).toMatchObject({ event: "endpoint.disabled", endpointId: goneEndpoint.endpoint!.id, url: gone.url, reason: endpoint.disabledReason });
    // "*" does not cover operational events: the default endpoint never saw it.
    await defaultReceiver.waitFor(1);
    expect(defaultReceiver.received.map((request) => request.json.event)).toEqual(["job.completed"]);

    await publisher.publish("job.completed", jobCompletedEvent(orgId));
    await defaultReceiver.waitFor(2);
    const skipped = await eventually(async () => {
      const { deliveries } = await client.listDeliveries({ limit: 10, status: "skipped" }, as(orgId));
      return deliveries.length === 1 && deliveries[0];
    });
    expect(skipped.endpointId).toBe(goneEndpoint.endpoint!.id);
    expect(skipped.attempts).toBe(0);
    expect(gone.received).toHaveLength(1);

    // Announced on the bus once (the auth service emails the org's admins), with what the webhook said.
    const [announced, ...more] = await eventually(async () => announcementsOf(goneEndpoint.endpoint!.id).length > 0 && announcementsOf(goneEndpoint.endpoint!.id));
    expect(more).toEqual([]);
    expect(announced!.data).toMatchObject({ orgId, endpointId: goneEndpoint.endpoint!.id, url: gone.url, reason: endpoint.disabledReason, disabledAt: (notice!.json as { disabledAt: number }).disabledAt });
    expect(announced!.data.eventId).toMatch(/^evt_/);
    expect(announced!.msgId).toBe(announced!.data.eventId);
  });

  it("auto-disables an endpoint whose deliveries all failed, and recovers its failed and skipped deliveries once re-enabled", async () => {
    const { orgId } = await orgWithDefault();
    let healthy = false;
    const flaky = await receiver((_request, response) => response.writeHead(healthy ? 200 : 500).end());
    const created = await client.createEndpoint({ url: flaky.url, events: ["job.completed"] }, as(orgId));
    const endpointId = created.endpoint!.id;
    const since = Date.now();
    for (let index = 0; index < 3; index += 1) await publisher.publish("job.completed", jobCompletedEvent(orgId));
    const disabled = await eventually(async () => {
      const current = await client.getEndpoint({ endpointId }, as(orgId));
      return !current.enabled && current;
    }, 30_000);
    expect(disabled.disabledReason).toContain("every delivery failed");
    const announced = await eventually(async () => announcementsOf(endpointId).length > 0 && announcementsOf(endpointId));
    expect(announced.map((announcement) => announcement.data)).toEqual([expect.objectContaining({ orgId, endpointId, url: flaky.url, reason: disabled.disabledReason })]);
    await publisher.publish("job.completed", jobCompletedEvent(orgId));
    await eventually(async () => (await client.listDeliveries({ limit: 10, status: "skipped" }, as(orgId))).deliveries.length === 1);

    await expect(client.recoverEndpoint({ endpointId, since }, as(orgId))).rejects.toMatchObject({ code: "CONFLICT" });
    healthy = true;
    const enabled = await client.updateEndpoint({ endpointId, enabled: true, events: [], setEvents: false, clearRateLimit: false }, as(orgId));
    expect(enabled).toMatchObject({ enabled: true });
    expect(enabled.disabledReason).toBeUndefined();
    const before = flaky.received.length;
    const { count } = await client.recoverEndpoint({ endpointId, since }, as(orgId));
    expect(count).toBe(4);
    await flaky.waitFor(before + 4);
    await eventually(async () => {
      const { deliveries } = await client.listDeliveries({ limit: 20 }, as(orgId));
      const mine = deliveries.filter((delivery) => delivery.endpointId === endpointId);
      return mine.length === 4 && mine.every((delivery) => delivery.status === "succeeded");
    });
    // The wait left of the 60 s interval, carried to the caller (the gateway answers it as Retry-After).
    const refused = await client.recoverEndpoint({ endpointId, since }, as(orgId)).then(
      () => undefined,
      (error: unknown) => error as { code: string; details?: { retryAfterSeconds?: number } },
    );
    expect(refused?.code).toBe("RATE_LIMITED");
    expect(refused?.details?.retryAfterSeconds).toBeGreaterThanOrEqual(1);
    expect(refused?.details?.retryAfterSeconds).toBeLessThanOrEqual(60);
  });

  it("stores the deliveries still waiting for a deleted endpoint as skipped", async () => {
    const { orgId } = await orgWithDefault();
    // Its retry waits 3 s (Retry-After): the endpoint is deleted meanwhile.
    const slow = await receiver((_request, response) => response.writeHead(503, { "retry-after": "3" }).end());
    const created = await client.createEndpoint({ url: slow.url, events: ["job.completed"] }, as(orgId));
    await publisher.publish("job.completed", jobCompletedEvent(orgId));
    await slow.waitFor(1);
    await client.deleteEndpoint({ endpointId: created.endpoint!.id }, as(orgId));
    const skipped = await eventually(async () => {
      const { deliveries } = await client.listDeliveries({ limit: 10, status: "skipped" }, as(orgId));
      return deliveries.length === 1 && deliveries[0];
    });
    expect(skipped).toMatchObject({ endpointId: created.endpoint!.id, attempts: 1 });
  });

  it("fails a delivery at once, unsent, when its endpoint's secret cannot be opened (its key dropped), keeps the endpoint enabled and delivers the org's others", async () => {
    const { orgId, defaultReceiver } = await orgWithDefault();
    const unsigned = await receiver();
    const created = await client.createEndpoint({ url: unsigned.url, events: ["job.completed"] }, as(orgId));
    // Sealed with a key no longer in SECRETS_ENCRYPTION_KEYS (as after an operator dropped its kid too early).
    await database.db.updateTable("endpoints").set({ secret_sealed: "v2:dropped:AAAAAAAAAAAAAAAA:AAAAAAAAAAAAAAAAAAAAAA==:AAAA" }).where("id", "=", created.endpoint!.id).execute();

    // More failures than WEBHOOK_DISABLE_MIN_FAILURES: the receiver is not at fault, so the endpoint stays enabled.
    for (let index = 0; index < 4; index += 1) await publisher.publish("job.completed", jobCompletedEvent(orgId));
    await defaultReceiver.waitFor(4);
    const failed = await eventually(async () => {
      const deliveries = (await client.listDeliveries({ limit: 20 }, as(orgId))).deliveries.filter((delivery) => delivery.endpointId === created.endpoint!.id);
      return deliveries.length === 4 && deliveries.every((delivery) => delivery.status === "failed") && deliveries;
    });
    for (const delivery of failed) {
      expect(delivery).toMatchObject({ attempts: 1, lastError: expect.stringMatching(/signing secret is unreadable/) });
      expect(delivery.attemptLog).toHaveLength(1);
    }
    expect(unsigned.received).toHaveLength(0);
    const listed = await client.listEndpoints({}, as(orgId));
    expect(listed.endpoints.find((endpoint) => endpoint.id === created.endpoint!.id)).toMatchObject({ enabled: true });
  });
});

describe("the auto-disable window", () => {
  const hour = 60 * 60 * 1000;
  const day = 24 * hour;
  async function deliveries(orgId: string, endpointId: string, rows: { ageMs: number; status: "failed" | "succeeded" }[]) {
    const now = Date.now();
    await database.db
      .insertInto("deliveries")
      .values(
        rows.map(({ ageMs, status }) => ({
          id: newId("del"),
          org_id: orgId,
          event: "job.completed",
          source_event_id: newId("evt"),
          job_id: null,
          batch_id: null,
          url: "https://example.com/hook",
          body: "{}",
          status,
          attempts: 4,
          chain_attempts: 4,
          next_attempt_at: null,
          lease_until: null,
          lease_token: null,
          last_attempt_at: now - ageMs,
          last_response_status: 500,
          last_error: "HTTP 500",
          event_at: now - ageMs,
          first_attempt_at: now - ageMs,
          created_at: now - ageMs,
          endpoint_id: endpointId,
        })),
      )
      .execute();
  }
  const window = { windowMs: day, minFailures: 20 };

  it("holds only when 20 or more deliveries have failed since the last success and the oldest failure is a window old", async () => {
    const failing = newId("org");
    await deliveries(failing, "ep_a", [{ ageMs: 25 * hour, status: "failed" }, ...Array.from({ length: 19 }, (_, n) => ({ ageMs: n * hour, status: "failed" as const }))]);
    expect(await failingForWindow(database.db, failing, "ep_a", window)).toBe(true);

    const tooFew = newId("org");
    await deliveries(tooFew, "ep_a", [{ ageMs: 25 * hour, status: "failed" }, ...Array.from({ length: 18 }, (_, n) => ({ ageMs: n * hour, status: "failed" as const }))]);
    expect(await failingForWindow(database.db, tooFew, "ep_a", window)).toBe(false);

    const tooRecent = newId("org");
    await deliveries(tooRecent, "ep_a", Array.from({ length: 30 }, (_, n) => ({ ageMs: n * 60_000, status: "failed" as const })));
    expect(await failingForWindow(database.db, tooRecent, "ep_a", window)).toBe(false);

    // A success an hour ago restarts the count: the failures before it do not matter.
    const recovered = newId("org");
    await deliveries(recovered, "ep_a", [
      ...Array.from({ length: 30 }, (_, n) => ({ ageMs: 30 * hour + n * 60_000, status: "failed" as const })),
      { ageMs: hour, status: "succeeded" },
      { ageMs: 30 * 60_000, status: "failed" },
    ]);
    expect(await failingForWindow(database.db, recovered, "ep_a", window)).toBe(false);
  });
});
