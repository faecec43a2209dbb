import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "@renderbus/ids";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import type { DispatcherService } from "../service.js";
import { connectPublisher, jobCompletedEvent, startFakeAuth, startReceiver, startTestDispatcher, testConfig } from "../testing/dispatcher-harness.js";
import { CONNECTIONS_PER_HOST } from "./post-webhook.js";

const SLOW_ANSWER_MS = 1500;

let fakeAuth: Awaited<ReturnType<typeof startFakeAuth>>;
let publisher: Awaited<ReturnType<typeof connectPublisher>>;
let dispatcher: DispatcherService;
let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;

beforeAll(async () => {
  const { natsUrl } = testInfra();
  const databaseUrl = await createTestDatabase("dispatcherfairhost");
  const namespace = testNamespace("fairhost");
  fakeAuth = await startFakeAuth();
  publisher = await connectPublisher(natsUrl, namespace);
  // An org may have twice as many attempts in flight as a host has connections: it can fill the host and queue more.
  dispatcher = await startTestDispatcher(
    testConfig(
      { databaseUrl, natsUrl, namespace, authAddress: fakeAuth.address },
      { WEBHOOK_TIMEOUT_MS: "5000", DISPATCHER_ORG_MAX_IN_FLIGHT: String(2 * CONNECTIONS_PER_HOST), WEBHOOK_RETRY_SCHEDULE_MS: "60000" },
    ),
  );
});

afterAll(async () => {
  await dispatcher?.stop();
  await publisher?.close();
  await fakeAuth?.stop();
  await receiver?.stop();
});

describe("orgs whose endpoints share a host, one answering slowly", () => {
  it("sends another org's deliveries on the first connections that come free, ahead of the slow org's queued attempts", async () => {
    const fastJobs = new Set<string>();
    receiver = await startReceiver((request, response) => {
      if (fastJobs.has((request.json as { jobId?: string }).jobId ?? "")) response.writeHead(200).end("ok");
      else setTimeout(() => response.writeHead(200).end("ok"), SLOW_ANSWER_MS);
    });
    const slowOrg = newId("org");
    const fastOrg = newId("org");
    for (const orgId of [slowOrg, fastOrg]) fakeAuth.setTarget({ orgId, plan: "pro", url: receiver.url, secret: "s" });

    // The slow org owes twice as many deliveries as the host has connections: it fills the host and queues as many
    // again. Then the other org's deliveries queue behind them.
    const slowEvents = Array.from({ length: 2 * CONNECTIONS_PER_HOST }, () => jobCompletedEvent(slowOrg));
    await Promise.all(slowEvents.map((event) => publisher.publish("job.completed", event)));
    await receiver.waitFor(CONNECTIONS_PER_HOST);
    const fastEvents = Array.from({ length: 4 }, () => jobCompletedEvent(fastOrg));
    for (const event of fastEvents) fastJobs.add(event.jobId);
    await Promise.all(fastEvents.map((event) => publisher.publish("job.completed", event)));

    // The first connections freed by slow answers go to the other org (it holds none, the slow org all the rest), not
    // to the slow org's attempts that queued before it; first come, first served, it would wait for a second round of
    // slow answers.
    await receiver.waitFor(CONNECTIONS_PER_HOST + fastEvents.length, 4 * SLOW_ANSWER_MS + 5000);
    const orgOf = (request: { json: unknown }) => (fastJobs.has((request.json as { jobId?: string }).jobId ?? "") ? "other" : "slow");
    expect(receiver.received.slice(0, CONNECTIONS_PER_HOST).map(orgOf)).toEqual(Array.from({ length: CONNECTIONS_PER_HOST }, () => "slow"));
    expect(receiver.received.slice(CONNECTIONS_PER_HOST, CONNECTIONS_PER_HOST + fastEvents.length).map(orgOf)).toEqual(fastEvents.map(() => "other"));
    await receiver.waitFor(slowEvents.length + fastEvents.length, 4 * SLOW_ANSWER_MS + 5000);
    expect(receiver.received.map((request) => request.headers["x-renderbus-attempt"])).toEqual(receiver.received.map(() => "1"));
  });
});
