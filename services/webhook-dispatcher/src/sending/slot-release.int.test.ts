import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import { newId } from "@renderbus/ids";
import { connectPublisher, eventually, jobCompletedEvent, sleep, startFakeAuth, startReceiver, startTestDispatcher, testConfig } from "../testing/dispatcher-harness.js";
import type { DispatcherService } from "../service.js";

let fakeAuth: Awaited<ReturnType<typeof startFakeAuth>>;
let publisher: Awaited<ReturnType<typeof connectPublisher>>;
let dispatcher: DispatcherService;
let databaseUrl: string;

beforeAll(async () => {
  const { natsUrl } = testInfra();
  databaseUrl = await createTestDatabase("dispatcherslots");
  const namespace = testNamespace("slots");
  fakeAuth = await startFakeAuth();
  publisher = await connectPublisher(natsUrl, namespace);
  // One attempt slot: what the slot waits for shows directly in what the receiver gets.
  const config = testConfig({ databaseUrl, natsUrl, namespace, authAddress: fakeAuth.address }, { DISPATCHER_CONCURRENCY: "1", DISPATCHER_ORG_MAX_IN_FLIGHT: "8" });
  dispatcher = await startTestDispatcher(config);
});

afterAll(async () => {
  await dispatcher?.stop();
  await publisher?.close();
  await fakeAuth?.stop();
});

describe("attempt slots", () => {
  it("go to the next attempt once an answer is in, not once it is recorded; as many records as slots may wait", async () => {
    const receiver = await startReceiver();
    try {
      const orgId = newId("org");
      fakeAuth.setTarget({ orgId, plan: "pro", url: receiver.url, secret: "whsec_slots" });
      // Recording an attempt writes its announcement to the outbox: holding the outbox holds every record.
      const blocker = new pg.Client({ connectionString: databaseUrl });
      await blocker.connect();
      try {
        await blocker.query("begin");
        await blocker.query("lock table dispatcher.outbox in access exclusive mode");
        for (let n = 0; n < 3; n += 1) await publisher.publish("job.completed", jobCompletedEvent(orgId));
        // The first attempt's answer frees the only slot while its record waits: the second is sent. The second's
        // record would make two waiting records for one slot, so it keeps the slot and the third waits.
        await receiver.waitFor(2);
        await sleep(1000);
        expect(receiver.received).toHaveLength(2);
        await blocker.query("rollback");
      } finally {
        await blocker.end();
      }
      await receiver.waitFor(3);
      const statuses = await eventually(async () => {
        const client = new pg.Client({ connectionString: databaseUrl });
        await client.connect();
        try {
          const { rows } = await client.query<{ status: string }>("select status from dispatcher.deliveries where org_id = $1", [orgId]);
          return rows.length === 3 && rows.every((row) => row.status === "succeeded") ? rows : undefined;
        } finally {
          await client.end();
        }
      });
      expect(statuses).toHaveLength(3);
      expect(new Set(receiver.received.map((request) => request.headers["x-renderbus-delivery"])).size).toBe(3);
    } finally {
      await receiver.stop();
    }
  });
});
