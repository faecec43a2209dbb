import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "@renderbus/ids";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import type { DispatcherService } from "../service.js";
import { connectPublisher, jobCompletedEvent, startFakeAuth, startReceiver, startTestDispatcher, testConfig } from "../testing/dispatcher-harness.js";

let fakeAuth: Awaited<ReturnType<typeof startFakeAuth>>;
let publisher: Awaited<ReturnType<typeof connectPublisher>>;
let dispatcher: DispatcherService;
const receivers: { stop(): Promise<void> }[] = [];

beforeAll(async () => {
  const { natsUrl } = testInfra();
  const databaseUrl = await createTestDatabase("dispatcheriso");
  const namespace = testNamespace("iso");
  fakeAuth = await startFakeAuth();
  publisher = await connectPublisher(natsUrl, namespace);
  // Few slots, and a timeout no attempt reaches during the test: the hanging org's attempts hold their slots
  // throughout, so without the per-org cap it would hold every slot and the other org would get nothing.
  dispatcher = await startTestDispatcher(
    testConfig({ databaseUrl, natsUrl, namespace, authAddress: fakeAuth.address }, { WEBHOOK_TIMEOUT_MS: "600000", DISPATCHER_CONCURRENCY: "16", DISPATCHER_ORG_MAX_IN_FLIGHT: "8" }),
  );
});

afterAll(async () => {
  await dispatcher?.stop();
  await publisher?.close();
  await fakeAuth?.stop();
  await Promise.all(receivers.map((receiver) => receiver.stop()));
});

describe("isolation between receivers", () => {
  it("delivers another org's 200 events while one org's receiver hangs on every request and holds its 8 slots", async () => {
    const hanging = await startReceiver(() => undefined);
    const healthy = await startReceiver();
    receivers.push(hanging, healthy);
    const hangingOrg = newId("org");
    const healthyOrg = newId("org");
    fakeAuth.setTarget({ orgId: hangingOrg, plan: "pro", url: hanging.url, secret: "s" });
    fakeAuth.setTarget({ orgId: healthyOrg, plan: "pro", url: healthy.url, secret: "s" });

    await Promise.all(Array.from({ length: 50 }, () => publisher.publish("job.completed", jobCompletedEvent(hangingOrg))));
    await hanging.waitFor(8);
    await Promise.all(Array.from({ length: 200 }, () => publisher.publish("job.completed", jobCompletedEvent(healthyOrg))));
    await healthy.waitFor(200, 60_000);
    // Every one of the 200 arrived while the hanging org's first 8 attempts were still open (none can time out
    // within the test), and the hanging org never got a ninth slot.
    expect(hanging.received).toHaveLength(8);
    expect(hanging.open()).toBe(8);
  });
});
