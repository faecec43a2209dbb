import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql, type Kysely } from "kysely";
import type { webhooks } from "@renderbus/contracts";
import { createDatabase, migrateToLatest, type Database } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import { createTestDatabase, recordStatements } from "@renderbus/testing";
import { migrations } from "../../migrations/index.js";
import { DISPATCHER_SCHEMA, type DispatcherTables } from "../database.js";
import { announceWaitingDeliveries, DELIVERIES_UPDATED_SUBJECT } from "./announcements.js";
import { insertDeliveries } from "./insert-deliveries.js";

let database: Database<DispatcherTables>;
let db: Kysely<DispatcherTables>;

beforeAll(async () => {
  database = createDatabase<DispatcherTables>({ url: await createTestDatabase("dispatchersweep"), schema: DISPATCHER_SCHEMA, maxConnections: 2 });
  db = database.db;
  await migrateToLatest(db, DISPATCHER_SCHEMA, migrations);
});
afterAll(async () => database?.close());

describe("announcing waiting deliveries", () => {
  it("announces a sweep's deliveries in one DeliveriesUpdated, each update with the trace of what created it", async () => {
    const now = Date.now();
    const orgId = newId("org");
    const traceHeaders = { traceparent: `00-${"a".repeat(32)}-${"b".repeat(16)}-01` };
    const rows = await insertDeliveries(
      db,
      [1, 2, 3].map(() => ({ orgId, event: "job.running", sourceEventId: newId("evt"), jobId: newId("job"), batchId: null, url: "http://127.0.0.1:9/", body: "{}", eventAt: now, traceHeaders })),
      { now: now - 10 },
    );
    expect(await announceWaitingDeliveries(db, { createdBefore: now, now })).toBe(3);
    const { rows: messages } = await sql<{ subject: string; body: webhooks.DeliveriesUpdated }>`select subject, body from outbox`.execute(db);
    expect(messages).toHaveLength(1);
    expect(messages[0]!.subject).toBe(DELIVERIES_UPDATED_SUBJECT);
    expect(messages[0]!.body.updates.map((update) => update.deliveryId).sort()).toEqual(rows.map((row) => row.id).sort());
    expect(messages[0]!.body.updates.every((update) => update.status === "pending" && update.trace.traceparent === traceHeaders.traceparent)).toBe(true);
  });

  it("leaves a delivery under a live lease to its attempt's record, and sweeps it once the lease has run out (a crashed replica)", async () => {
    const now = Date.now();
    const orgId = newId("org");
    const lease = { token: "lease-of-a-replica", until: now + 30_000, limit: 2, orgMaxInFlight: 8 };
    const rows = await insertDeliveries(
      db,
      [1, 2].map(() => ({ orgId, event: "job.running", sourceEventId: newId("evt"), jobId: newId("job"), batchId: null, url: "http://127.0.0.1:9/", body: "{}", eventAt: now })),
      { now: now - 10, lease },
    );
    expect(rows.every((row) => row.lease_token === lease.token)).toBe(true);
    await sql`delete from outbox`.execute(db);

    // Its attempt is under way: the sweep neither announces nor locks it.
    expect(await announceWaitingDeliveries(db, { createdBefore: now, now })).toBe(0);
    // The replica died: once its lease has run out, the delivery waits for a claim and is announced as pending.
    expect(await announceWaitingDeliveries(db, { createdBefore: now, now: lease.until + 1 })).toBe(2);
  });

  it("costs an idle replica one statement, outside any transaction, when nothing waits", async () => {
    const { statements, stop } = recordStatements(database.pool);
    try {
      const now = Date.now();
      await sql`update deliveries set announced = true`.execute(db);
      statements.length = 0;
      expect(await announceWaitingDeliveries(db, { createdBefore: now, now })).toBe(0);
      expect(statements).toHaveLength(1);
      expect(statements[0]).toMatch(/select exists/);
    } finally {
      stop();
    }
  });
});
