import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "@renderbus/ids";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import type { DispatcherService } from "../service.js";
import {
  connectPublisher,
  eventually,
  jobCompletedEvent,
  sleep,
  startFakeAuth,
  startReceiver,
  startTestDispatcher,
  testConfig,
  webhooksClient,
  type ReceivedRequest,
  type ReceiverBehaviour,
} from "../testing/dispatcher-harness.js";

/** FIFO and rate-limited endpoints set up through the endpoints API (docs/webhooks.md, "Ordering", "Throttling"). */
let fakeAuth: Awaited<ReturnType<typeof startFakeAuth>>;
let publisher: Awaited<ReturnType<typeof connectPublisher>>;
let dispatcher: DispatcherService;
let client: ReturnType<typeof webhooksClient>;
const receivers: { stop(): Promise<void> }[] = [];

const as = (orgId: string) => ({ auth: { orgId, userId: "usr_test", plan: "pro", role: "admin" } });
const sequenceOf = (request: ReceivedRequest) => request.headers["x-renderbus-sequence"];

async function receiver(behave?: ReceiverBehaviour) {
  const started = await startReceiver(behave);
  receivers.push(started);
  return started;
}

/** An org on the pro plan without a webhookUrl: only the endpoints a test creates receive anything. */
function org(): string {
  const orgId = newId("org");
  fakeAuth.setTarget({ orgId, plan: "pro" });
  return orgId;
}

async function publish(orgId: string, count: number): Promise<void> {
  for (let i = 0; i < count; i += 1) await publisher.publish("job.completed", jobCompletedEvent(orgId));
}

beforeAll(async () => {
  const { natsUrl } = testInfra();
  const databaseUrl = await createTestDatabase("dispatcherfifoapi");
  const namespace = testNamespace("fifoapi");
  fakeAuth = await startFakeAuth();
  publisher = await connectPublisher(natsUrl, namespace);
  dispatcher = await startTestDispatcher(
    testConfig({ databaseUrl, natsUrl, namespace, authAddress: fakeAuth.address }, { WEBHOOK_RETRY_SCHEDULE_MS: "60000", WEBHOOK_TIMEOUT_MS: "2000" }),
  );
  client = webhooksClient(dispatcher.grpcPort);
});

afterAll(async () => {
  client?.close();
  await dispatcher?.stop();
  await publisher?.close();
  await fakeAuth?.stop();
  await Promise.all(receivers.map((started) => started.stop()));
});

describe("FIFO endpoints through the API", () => {
  it("numbers a FIFO endpoint's deliveries 1, 2, 3 in order, and only its own", async () => {
    const orgId = org();
    const [ordered, plain] = [await receiver(), await receiver()];
    const created = await client.createEndpoint({ url: ordered.url, events: ["*"], ordering: "fifo" }, as(orgId));
    expect(created.endpoint).toMatchObject({ ordering: "fifo" });
    await client.createEndpoint({ url: plain.url, events: ["*"] }, as(orgId));
    await publish(orgId, 20);
    await ordered.waitFor(20, 60_000);
    await plain.waitFor(20, 60_000);
    expect(ordered.received.map(sequenceOf)).toEqual(Array.from({ length: 20 }, (_, i) => String(i + 1)));
    expect(plain.received.map(sequenceOf)).toEqual(Array.from({ length: 20 }, () => undefined));
  }, 90_000);

  it("holds a FIFO endpoint behind a failing delivery without slowing the org's other endpoints", async () => {
    const orgId = org();
    const blocked = await receiver((_request, response) => response.writeHead(500).end("down"));
    const plain = await receiver();
    await client.createEndpoint({ url: blocked.url, events: ["*"], ordering: "fifo" }, as(orgId));
    await client.createEndpoint({ url: plain.url, events: ["*"] }, as(orgId));
    await publish(orgId, 15);
    await plain.waitFor(15, 60_000);
    // The head failed and waits for its retry (a minute away): nothing behind it was sent meanwhile.
    await blocked.waitFor(1, 60_000);
    await sleep(1000);
    expect(blocked.received.map(sequenceOf)).toEqual(["1"]);
  }, 90_000);

  it("starts numbering when an endpoint is switched to FIFO, and throttles one given a rate limit", async () => {
    const orgId = org();
    const target = await receiver();
    const { endpoint } = await client.createEndpoint({ url: target.url, events: ["*"] }, as(orgId));
    await client.updateEndpoint({ endpointId: endpoint!.id, ordering: "fifo", rateLimitPerSecond: 4, events: [], setEvents: false, clearRateLimit: false }, as(orgId));
    await eventually(async () => (await client.getEndpoint({ endpointId: endpoint!.id }, as(orgId))).ordering === "fifo", 10_000);
    // The endpoint cache of this replica was dropped by the update: the next events are ordered and throttled.
    await publish(orgId, 9);
    await target.waitFor(9, 60_000);
    expect(target.received.map(sequenceOf)).toEqual(Array.from({ length: 9 }, (_, i) => String(i + 1)));
    const arrivals = target.received.map((request) => request.receivedAt);
    // 4 per second: the 5th arrives a second after the 1st, the 9th two seconds after (less a busy machine's jitter;
    // 8 per second would put them half as far apart).
    expect(arrivals[4]! - arrivals[0]!).toBeGreaterThanOrEqual(1000 - 300);
    expect(arrivals[8]! - arrivals[0]!).toBeGreaterThanOrEqual(2000 - 300);
  }, 90_000);
});
