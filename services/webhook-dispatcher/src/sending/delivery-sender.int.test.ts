import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { AckPolicy, DeliverPolicy } from "@nats-io/jetstream";
import { STREAMS, durableForSubject } from "@renderbus/bus";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import { isBlockedAddress } from "@renderbus/address-guard";
import { newId } from "@renderbus/ids";
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
} from "../testing/dispatcher-harness.js";
import type { DispatcherService } from "../service.js";
import type { DispatcherConfig } from "../config.js";
import { DISPATCHER_DURABLE } from "../ingest/job-events.consumer.js";

const SECRET = "whsec_test_secret";
const SCHEDULE = [50, 250, 1250];
const TIMEOUT_MS = 400;

let fakeAuth: Awaited<ReturnType<typeof startFakeAuth>>;
let publisher: Awaited<ReturnType<typeof connectPublisher>>;
let dispatcher: DispatcherService;
let config: DispatcherConfig;
let databaseUrl: string;
const receivers: { stop(): Promise<void> }[] = [];

async function receiverForNewOrg(behave?: Parameters<typeof startReceiver>[0], plan = "pro") {
  const receiver = await startReceiver(behave);
  receivers.push(receiver);
  const orgId = newId("org");
  fakeAuth.setTarget({ orgId, plan, url: receiver.url, secret: SECRET });
  return { receiver, orgId };
}

async function deliveryRows(orgId: string) {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const { rows } = await client.query("select * from dispatcher.deliveries where org_id = $1 order by id", [orgId]);
    return rows;
  } finally {
    await client.end();
  }
}

/** Receivers here stand in for public endpoints: their answers are recorded as a public receiver's would be. */
const receiverCountsAsPublic = (address: string) => address !== "127.0.0.1" && isBlockedAddress(address);

beforeAll(async () => {
  const { natsUrl } = testInfra();
  databaseUrl = await createTestDatabase("dispatchersender");
  const namespace = testNamespace("sender");
  fakeAuth = await startFakeAuth();
  publisher = await connectPublisher(natsUrl, namespace);
  config = testConfig(
    { databaseUrl, natsUrl, namespace, authAddress: fakeAuth.address },
    { WEBHOOK_RETRY_SCHEDULE_MS: SCHEDULE.join(","), WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS), DISPATCHER_ORG_MAX_IN_FLIGHT: "4" },
  );
  dispatcher = await startTestDispatcher(config, { addressPolicy: receiverCountsAsPublic });
});

afterAll(async () => {
  await dispatcher?.stop();
  await publisher?.close();
  await fakeAuth?.stop();
  await Promise.all(receivers.map((receiver) => receiver.stop()));
});

describe("webhook delivery", () => {
  it("sends job.completed signed over the exact raw bytes, with the exact documented headers and body", async () => {
    const { receiver, orgId } = await receiverForNewOrg();
    const event = jobCompletedEvent(orgId);
    await publisher.publish("job.completed", event);
    const [request] = await receiver.waitFor(1);
    const expected = `sha256=${createHmac("sha256", SECRET).update(request!.rawBody).digest("hex")}`;
    expect(request!.headers["x-renderbus-signature"]).toBe(expected);
    expect(request!.headers["x-renderbus-event"]).toBe("job.completed");
    expect(request!.headers["x-renderbus-delivery"]).toMatch(/^del_[0-9A-HJKMNP-TV-Z]{26}$/);
    expect(request!.headers["x-renderbus-attempt"]).toBe("1");
    expect(request!.headers["content-type"]).toBe("application/json");
    expect(request!.headers["user-agent"]).toMatch(/^Renderbus-Webhooks\/\d+\.\d+\.\d+$/);
    expect(request!.json).toEqual({
      event: "job.completed",
      jobId: event.jobId,
      result: { url: event.result.url, metadata: { durationMs: 127000, width: 1920, height: 1080, fileSize: 1234567 } },
      cost: { credits: 26, breakdown: "2m7s video @1080p" },
      timing: { createdAt: event.timing.createdAt, startedAt: event.timing.startedAt, completedAt: event.timing.completedAt },
    });
    const [row] = await eventually(async () => {
      const rows = await deliveryRows(orgId);
      return rows[0]?.status === "succeeded" ? rows : undefined;
    });
    expect(row.id).toBe(request!.headers["x-renderbus-delivery"]);
  });

  it("sends job.failed without cost and job.running with type and start time", async () => {
    const { receiver, orgId } = await receiverForNewOrg();
    const jobId = newId("job");
    await publisher.publish("job.running", { jobId, orgId, type: "transcode", createdAt: 1000, startedAt: 2000, workerId: "w1" });
    await publisher.publish("job.failed", { jobId, orgId, error: { code: "PROVIDER_ERROR", message: "ffmpeg exited with 1" }, timing: { createdAt: 1000, startedAt: 2000, completedAt: 3000 } });
    const requests = await receiver.waitFor(2);
    const byEvent = Object.fromEntries(requests.map((request) => [request.json.event, request.json]));
    expect(byEvent["job.running"]).toEqual({ event: "job.running", jobId, type: "transcode", timing: { createdAt: 1000, startedAt: 2000 } });
    expect(byEvent["job.failed"]).toEqual({
      event: "job.failed",
      jobId,
      error: { code: "PROVIDER_ERROR", message: "ffmpeg exited with 1" },
      timing: { createdAt: 1000, startedAt: 2000, completedAt: 3000 },
    });
  });

  it("sends no webhook for a cancelled job, nor for an org on the free plan", async () => {
    const { receiver, orgId } = await receiverForNewOrg();
    const free = await receiverForNewOrg(undefined, "free");
    await publisher.publish("job.cancelled", { jobId: newId("job"), orgId, fromStatus: "running", cancelledAt: 5 });
    await publisher.publish("job.completed", jobCompletedEvent(free.orgId));
    // A later event of the first org proves the earlier ones were processed (one consumer, in order).
    await publisher.publish("job.running", { jobId: newId("job"), orgId, type: "thumbnail", createdAt: 1, startedAt: 2, workerId: "w" });
    const [request] = await receiver.waitFor(1);
    await sleep(300);
    expect(receiver.received).toHaveLength(1);
    expect(request!.json.event).toBe("job.running");
    expect(free.receiver.received).toHaveLength(0);
  });

  it("creates one delivery for an event published twice with the same id (JetStream dedup)", async () => {
    const { receiver, orgId } = await receiverForNewOrg();
    const event = jobCompletedEvent(orgId);
    const eventId = newId("evt");
    await publisher.bus.publish("jobs.events.job.completed", event, { msgId: eventId });
    await publisher.bus.publish("jobs.events.job.completed", event, { msgId: eventId });
    await receiver.waitFor(1);
    await sleep(300);
    expect(await deliveryRows(orgId)).toHaveLength(1);
  });

  it("creates no second delivery when JetStream delivers an event again (its first ack lost)", async () => {
    const { receiver, orgId } = await receiverForNewOrg();
    const { seq } = await publisher.bus.publish("jobs.events.job.completed", jobCompletedEvent(orgId), { msgId: newId("evt") });
    await receiver.waitFor(1);
    // Recorded first: an attempt still in flight at shutdown is given back and sent again (documented duplicate).
    await eventually(async () => (await deliveryRows(orgId))[0]?.status === "succeeded");
    // As if the ack had been lost: stop the dispatcher and move its durable for job.completed back to this message,
    // so the restarted dispatcher receives the same message (same event id) again.
    await dispatcher.stop();
    const stream = publisher.bus.streamName(STREAMS.jobEvents);
    const durable = durableForSubject(DISPATCHER_DURABLE, "jobs.events.job.completed");
    await publisher.bus.jsm.consumers.delete(stream, durable);
    await publisher.bus.jsm.consumers.add(stream, {
      durable_name: durable,
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.StartSequence,
      opt_start_seq: seq,
      filter_subject: publisher.bus.subject("jobs.events.job.completed"),
    });
    dispatcher = await startTestDispatcher(config, { addressPolicy: receiverCountsAsPublic });
    await eventually(async () => {
      const info = await publisher.bus.jsm.consumers.info(stream, durable);
      return info.delivered.stream_seq >= seq && info.num_pending === 0 && info.num_ack_pending === 0;
    });
    await sleep(300);
    expect(await deliveryRows(orgId)).toHaveLength(1);
    expect(receiver.received).toHaveLength(1);
  });

  it("retries a failing receiver on the schedule and succeeds on the fourth attempt with the same delivery id", async () => {
    let calls = 0;
    const { receiver, orgId } = await receiverForNewOrg((_request, response) => {
      calls += 1;
      response.writeHead(calls <= 3 ? 500 : 200).end(calls <= 3 ? "boom" : "ok");
    });
    await publisher.publish("job.completed", jobCompletedEvent(orgId));
    const requests = await receiver.waitFor(4, 10_000);
    expect(requests.map((request) => request.headers["x-renderbus-attempt"])).toEqual(["1", "2", "3", "4"]);
    expect(new Set(requests.map((request) => request.headers["x-renderbus-delivery"])).size).toBe(1);
    const gaps = requests.slice(1).map((request, index) => request.receivedAt - requests[index]!.receivedAt);
    SCHEDULE.forEach((delay, index) => {
      expect(gaps[index]).toBeGreaterThanOrEqual(delay - 5);
      expect(gaps[index]).toBeLessThan(delay + 400);
    });
    const [row] = await eventually(async () => {
      const rows = await deliveryRows(orgId);
      return rows[0]?.status === "succeeded" ? rows : undefined;
    });
    expect(row.attempts).toBe(4);
  });

  it("records each attempt's request headers without any signature, the body, and the response's status, headers and first 4 KB", async () => {
    const { receiver, orgId } = await receiverForNewOrg((_request, response) =>
      response.writeHead(200, { "x-receiver": "hooks-1", "content-type": "text/plain", "set-cookie": ["a=1", "b=2"] }).end("y".repeat(6000)),
    );
    await publisher.publish("job.completed", jobCompletedEvent(orgId));
    const [request] = await receiver.waitFor(1, 10_000);
    const client = webhooksClient(dispatcher.grpcPort);
    const delivery = await eventually(async () => {
      const { deliveries } = await client.listDeliveries({ limit: 10 }, { auth: { orgId, userId: "usr_x", plan: "pro" } });
      return deliveries[0]?.attemptLog.length ? deliveries[0] : undefined;
    });
    client.close();
    const [attempt] = delivery.attemptLog;
    // The body the log shows is the exact body the receiver got.
    expect(delivery.body).toBe(request!.rawBody.toString("utf8"));
    expect(attempt!.requestHeaders).toMatchObject({
      "content-type": "application/json",
      "X-Renderbus-Event": "job.completed",
      "X-Renderbus-Delivery": delivery.id,
      "X-Renderbus-Attempt": "1",
      "webhook-id": delivery.id,
      "webhook-timestamp": request!.headers["webhook-timestamp"],
    });
    // The receiver got the signatures; the log never holds them, under any letter case.
    expect(request!.headers["x-renderbus-signature"]).toMatch(/^sha256=/);
    expect(request!.headers["webhook-signature"]).toMatch(/^v1,/);
    expect(Object.keys(attempt!.requestHeaders).map((name) => name.toLowerCase())).not.toEqual(expect.arrayContaining(["x-renderbus-signature"]));
    expect(Object.keys(attempt!.requestHeaders).map((name) => name.toLowerCase())).not.toContain("webhook-signature");
    expect(JSON.stringify(delivery)).not.toContain(String(request!.headers["webhook-signature"]).slice(3));
    expect(JSON.stringify(delivery)).not.toContain(String(request!.headers["x-renderbus-signature"]).slice(7));
    expect(attempt!.responseStatus).toBe(200);
    expect(attempt!.responseHeaders).toMatchObject({ "x-receiver": "hooks-1", "content-type": "text/plain", "set-cookie": "a=1, b=2" });
    expect(attempt!.responseExcerpt).toBe("y".repeat(4096));
    expect(attempt!.latencyMs).toBeGreaterThanOrEqual(0);
  });

  it("marks a delivery failed after exactly four failed attempts and records each one", async () => {
    const { receiver, orgId } = await receiverForNewOrg((_request, response) => response.writeHead(503).end("x".repeat(5000)));
    await publisher.publish("job.completed", jobCompletedEvent(orgId));
    await receiver.waitFor(4, 10_000);
    const [row] = await eventually(async () => {
      const rows = await deliveryRows(orgId);
      return rows[0]?.status === "failed" ? rows : undefined;
    });
    await sleep(SCHEDULE.at(-1)! + 300);
    expect(receiver.received).toHaveLength(4);
    expect(row.attempts).toBe(4);
    const client = webhooksClient(dispatcher.grpcPort);
    const { deliveries } = await client.listDeliveries({ limit: 10 }, { auth: { orgId, userId: "usr_x", plan: "pro" } });
    client.close();
    expect(deliveries[0]!.attemptLog.map((attempt) => [attempt.attempt, attempt.responseStatus])).toEqual([[1, 503], [2, 503], [3, 503], [4, 503]]);
    expect(deliveries[0]!.attemptLog[0]!.responseExcerpt).toHaveLength(4096);
  });

  it("treats a redirect as a failure and does not follow it", async () => {
    const { receiver, orgId } = await receiverForNewOrg((request, response) =>
      request.headers["x-renderbus-attempt"] === "1" ? response.writeHead(302, { location: "/elsewhere" }).end() : response.writeHead(200).end(),
    );
    await publisher.publish("job.completed", jobCompletedEvent(orgId));
    const requests = await receiver.waitFor(2);
    expect(requests.map((request) => request.headers["x-renderbus-attempt"])).toEqual(["1", "2"]);
    const client = webhooksClient(dispatcher.grpcPort);
    const delivery = await eventually(async () => {
      const { deliveries } = await client.listDeliveries({ limit: 10 }, { auth: { orgId, userId: "usr_x", plan: "pro" } });
      return deliveries[0]?.status === "succeeded" ? deliveries[0] : undefined;
    });
    client.close();
    expect(delivery.attemptLog[0]).toMatchObject({ responseStatus: 302, error: "redirect (302) not followed" });
  });

  it("cuts a receiver that never answers at the timeout", async () => {
    const { receiver, orgId } = await receiverForNewOrg(() => undefined);
    await publisher.publish("job.completed", jobCompletedEvent(orgId));
    await receiver.waitFor(2, 5000);
    const client = webhooksClient(dispatcher.grpcPort);
    const delivery = await eventually(async () => {
      const { deliveries } = await client.listDeliveries({ limit: 10 }, { auth: { orgId, userId: "usr_x", plan: "pro" } });
      return (deliveries[0]?.attemptLog.length ?? 0) >= 1 ? deliveries[0] : undefined;
    });
    client.close();
    const first = delivery.attemptLog[0]!;
    expect(first.error).toBe(`timed out after ${TIMEOUT_MS} ms`);
    expect(first.latencyMs).toBeGreaterThanOrEqual(TIMEOUT_MS - 20);
    expect(first.latencyMs).toBeLessThan(TIMEOUT_MS + 300);
  });

});
