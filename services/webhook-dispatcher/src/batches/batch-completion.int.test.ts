import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STREAMS } from "@renderbus/bus";
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
} from "../testing/dispatcher-harness.js";

let fakeAuth: Awaited<ReturnType<typeof startFakeAuth>>;
let publisher: Awaited<ReturnType<typeof connectPublisher>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
const dispatchers: DispatcherService[] = [];

beforeAll(async () => {
  const { natsUrl } = testInfra();
  const databaseUrl = await createTestDatabase("dispatcherbatch");
  const namespace = testNamespace("batch");
  fakeAuth = await startFakeAuth();
  receiver = await startReceiver();
  publisher = await connectPublisher(natsUrl, namespace);
  const config = testConfig({ databaseUrl, natsUrl, namespace, authAddress: fakeAuth.address });
  // Two replicas sharing the durable consumer, started at once (both migrate and declare the consumer).
  dispatchers.push(...(await Promise.all([startTestDispatcher(config), startTestDispatcher(config)])));
});

afterAll(async () => {
  await Promise.all(dispatchers.map((dispatcher) => dispatcher.stop()));
  await publisher?.close();
  await fakeAuth?.stop();
  await receiver?.stop();
});

describe("batch.completed", () => {
  it("fires exactly once for a 50-job batch processed by 2 replicas with duplicated events", async () => {
    const orgId = newId("org");
    fakeAuth.setTarget({ orgId, plan: "scale", url: receiver.url, secret: "s" });
    const batchId = newId("batch");
    const jobIds = Array.from({ length: 50 }, () => newId("job"));
    const terminalEvents = jobIds.map((jobId, index) => {
      if (index % 10 === 0) return ["job.cancelled", { jobId, orgId, batchId, fromStatus: "waiting", cancelledAt: 10 }] as const;
      if (index % 5 === 0) return ["job.failed", { jobId, orgId, batchId, error: { code: "INPUT_ERROR", message: "not media" }, timing: { createdAt: 1, completedAt: 2 } }] as const;
      return ["job.completed", jobCompletedEvent(orgId, jobId, batchId)] as const;
    });
    const [firstHalf, secondHalf] = [terminalEvents.slice(0, 25), terminalEvents.slice(25)];
    // Terminal events may overtake batch.created; each terminal event also arrives twice under different ids.
    await Promise.all(firstHalf.flatMap(([event, body]) => [publisher.publish(event, body), publisher.publish(event, body)]));
    await publisher.publish("batch.created", { batchId, orgId, jobIds, createdAt: 1_700_000_000_000 });
    await Promise.all(secondHalf.flatMap(([event, body]) => [publisher.publish(event, body), publisher.publish(event, body)]));

    const batchWebhooks = await eventually(async () => {
      const found = receiver.received.filter((request) => request.json.event === "batch.completed");
      return found.length > 0 ? found : undefined;
    });
    await sleep(1000);
    expect(receiver.received.filter((request) => request.json.event === "batch.completed")).toHaveLength(1);
    const body = batchWebhooks[0]!.json;
    expect(body).toEqual({
      event: "batch.completed",
      batchId,
      jobCount: 50,
      counts: { completed: 40, failed: 5, cancelled: 5 },
      timing: { createdAt: 1_700_000_000_000, completedAt: expect.any(Number) },
    });

    const stream = publisher.bus.streamName(STREAMS.webhookEvents);
    const info = await publisher.bus.jsm.streams.info(stream, { subjects_filter: ">" });
    const subjects = info.state.subjects ?? {};
    expect(subjects[publisher.bus.subject("webhooks.events.batch.completed")]).toBe(1);
  });
});
