import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { webhooks } from "@renderbus/contracts";
import { createDatabase, type Database } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import { DISPATCHER_SCHEMA, type DispatcherTables } from "../database.js";
import type { DispatcherService } from "../service.js";
import { connectPublisher, eventually, jobCompletedEvent, startFakeAuth, startReceiver, startTestDispatcher, testConfig } from "../testing/dispatcher-harness.js";
import { announceWaitingDeliveries, DELIVERIES_UPDATED_SUBJECT } from "./announcements.js";

let fakeAuth: Awaited<ReturnType<typeof startFakeAuth>>;
let publisher: Awaited<ReturnType<typeof connectPublisher>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let dispatcher: DispatcherService;
let database: Database<DispatcherTables>;
let databaseUrl: string;
/** Every DeliveryUpdated the dispatcher published (each DeliveriesUpdated's updates), in stream order (one relay, one connection). */
const announced: webhooks.DeliveryUpdated[] = [];
let stopListening: () => void;

beforeAll(async () => {
  const { natsUrl } = testInfra();
  databaseUrl = await createTestDatabase("dispatcherannounce");
  const namespace = testNamespace("announce");
  fakeAuth = await startFakeAuth();
  receiver = await startReceiver();
  publisher = await connectPublisher(natsUrl, namespace);
  stopListening = publisher.bus.listen<webhooks.DeliveriesUpdated>(DELIVERIES_UPDATED_SUBJECT, (batch) => announced.push(...batch.updates));
  await publisher.bus.nc.flush();
  dispatcher = await startTestDispatcher(testConfig({ databaseUrl, natsUrl, namespace, authAddress: fakeAuth.address }));
  database = createDatabase<DispatcherTables>({ url: databaseUrl, schema: DISPATCHER_SCHEMA, maxConnections: 2 });
});

afterAll(async () => {
  stopListening?.();
  await dispatcher?.stop();
  await database?.close();
  await publisher?.close();
  await fakeAuth?.stop();
  await receiver?.stop();
});

describe("DeliveryUpdated announcements", () => {
  it("announces a delivery attempted at once by its attempt only: one event, with the attempt's outcome", async () => {
    const orgId = newId("org");
    fakeAuth.setTarget({ orgId, plan: "pro", url: receiver.url, secret: "s" });
    await publisher.publish("job.completed", jobCompletedEvent(orgId));
    const [afterAttempt] = await eventually(async () => {
      const ofOrg = announced.filter((update) => update.orgId === orgId);
      return ofOrg.some((update) => update.attempts === 1) ? ofOrg : undefined;
    });
    // A creation announcement would have been published first (same outbox, position order), so it would be here.
    expect(announced.filter((update) => update.orgId === orgId)).toHaveLength(1);
    expect(afterAttempt).toMatchObject({ orgId, event: "job.completed", status: "succeeded", attempts: 1, lastResponseStatus: 200 });
  });

  it("announces a delivery still waiting for its first attempt as pending, once", async () => {
    const orgId = newId("org");
    const deliveryId = newId("del");
    const jobId = newId("job");
    // Not due (no next_attempt_at), so no sender touches it; created "later" than the dispatcher's own sweep looks.
    const createdAt = Date.now() + 60_000;
    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      await client.query(
        `insert into dispatcher.deliveries (id, org_id, event, job_id, url, body, status, event_at, created_at, announced)
         values ($1, $2, 'job.running', $3, 'http://127.0.0.1:1/', '{}', 'pending', $4, $4, false)`,
        [deliveryId, orgId, jobId, createdAt],
      );
    } finally {
      await client.end();
    }

    expect(await announceWaitingDeliveries(database.db, { createdBefore: createdAt + 1 })).toBe(1);
    expect(await announceWaitingDeliveries(database.db, { createdBefore: createdAt + 1 })).toBe(0);
    const update = await eventually(async () => announced.find((each) => each.deliveryId === deliveryId));
    expect(update).toMatchObject({ orgId, jobId, event: "job.running", status: "pending", attempts: 0 });
  });
});
