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
  // The seed's 10 s timeout and few slots: without the per-org cap the hanging org would hold every slot.
  dispatcher = await startTestDispatcher(
    testConfig({ databaseUrl, natsUrl, namespace, authAddress: fakeAuth.address }, { WEBHOOK_TIMEOUT_MS: "10000", DISPATCHER_CONCURRENCY: "16", DISPATCHER_ORG_MAX_IN_FLIGHT: "8" }),
  );
});

afterAll(async () => {
  await dispatcher?.stop();
  await publisher?.close();
  await fakeAuth?.stop();
  await Promise.all(receivers.map((receiver) => receiver.stop()));
});

describe("isolation between receivers", () => {
  it("delivers another org's 200 events promptly while one org's receiver hangs on every request", async () => {
    const hanging = await startReceiver(() => undefined);
    const healthy = await startReceiver();
    receivers.push(hanging, healthy);
    const hangingOrg = newId("org");
    const healthyOrg = newId("org");
    fakeAuth.setTarget({ orgId: hangingOrg, plan: "pro", url: hanging.url, secret: "s" });
    fakeAuth.setTarget({ orgId: healthyOrg, plan: "pro", url: healthy.url, secret: "s" });

    await Promise.all(Array.from({ length: 50 }, () => publisher.publish("job.completed", jobCompletedEvent(hangingOrg))));
    await hanging.waitFor(8);
    const started = Date.now();
    await Promise.all(Array.from({ length: 200 }, () => publisher.publish("job.completed", jobCompletedEvent(healthyOrg))));
    await healthy.waitFor(200, 9000);
    // All 200 arrive before the hanging receiver's first attempts even time out (10 s).
    expect(Date.now() - started).toBeLessThan(8000);
    expect(hanging.received).toHaveLength(8);
  });
});
