import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { sql, type Kysely } from "kysely";
import type { webhooks } from "@renderbus/contracts";
import { createDatabase, migrateToLatest, type Database } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import { createTestDatabase } from "@renderbus/testing";
import { migrations } from "../../migrations/index.js";
import { DISPATCHER_SCHEMA, type DispatcherTables } from "../database.js";
import { DELIVERIES_UPDATED_SUBJECT, MAX_UPDATES_PER_MESSAGE } from "./announcements.js";
import { claimDueDeliveries } from "./delivery-queue.js";
import { insertDeliveries } from "./insert-deliveries.js";
import { recordAttempts, type AttemptToRecord } from "./record-attempts.js";
import type { DeliveryRow } from "./delivery.js";

let database: Database<DispatcherTables>;
let db: Kysely<DispatcherTables>;

beforeAll(async () => {
  database = createDatabase<DispatcherTables>({ url: await createTestDatabase("dispatcherrecord"), schema: DISPATCHER_SCHEMA, maxConnections: 2 });
  db = database.db;
  await migrateToLatest(db, DISPATCHER_SCHEMA, migrations);
});
afterAll(async () => database?.close());
beforeEach(async () => void (await sql`truncate deliveries, outbox cascade`.execute(db)));

/** `count` due deliveries of as many jobs, claimed by "replica-a". */
async function claimed(orgId: string, count: number, now: number): Promise<DeliveryRow[]> {
  await insertDeliveries(
    db,
    Array.from({ length: count }, () => ({ orgId, event: "job.completed", sourceEventId: newId("evt"), jobId: newId("job"), batchId: null, url: "http://127.0.0.1:9/", body: "{}", eventAt: now })),
    { now: now - 1 },
  );
  return (await claimDueDeliveries(db, { limit: count, orgMaxInFlight: count, leaseMs: 10_000, leaseToken: "replica-a", now })).rows;
}

const succeeded = (delivery: DeliveryRow, traceId: string): AttemptToRecord => ({
  delivery,
  leaseToken: "replica-a",
  traceHeaders: { traceparent: `00-${traceId}-${"1".repeat(16)}-01` },
  attempt: { attempt: 1, startedAt: 1, responseStatus: 200, error: null, latencyMs: 3, responseExcerpt: null, requestHeaders: null, responseHeaders: null, status: "succeeded", nextAttemptAt: null, url: delivery.url },
});

const outbox = async () => (await sql<{ message_id: string; subject: string; body: webhooks.DeliveriesUpdated; headers: Record<string, string> }>`select message_id, subject, body, headers from outbox order by position`.execute(db)).rows;

describe("recording a group of attempts", () => {
  it("announces the group in one outbox row holding exactly the updates whose lease still matched, each with its own trace", async () => {
    const now = Date.now();
    const orgId = newId("org");
    const rows = await claimed(orgId, 4, now);
    expect(rows).toHaveLength(4);
    // Another replica took the third over meanwhile: its outcome wins, this attempt contributes nothing.
    await db.updateTable("deliveries").set({ lease_token: "replica-b" }).where("id", "=", rows[2]!.id).execute();
    const traceIds = rows.map((_, i) => String(i + 1).repeat(32));

    const recorded = await recordAttempts(db, rows.map((row, i) => succeeded(row, traceIds[i]!)), now);

    expect(recorded.map((row) => row?.status)).toEqual(["succeeded", "succeeded", undefined, "succeeded"]);
    const [message, ...more] = await outbox();
    expect(more).toEqual([]);
    expect(message!.subject).toBe(DELIVERIES_UPDATED_SUBJECT);
    expect(message!.headers).toEqual({ "Rb-Event-Type": "deliveries.updated" });
    const kept = [0, 1, 3];
    expect(message!.body.updates).toEqual(
      kept.map((i) => ({
        deliveryId: rows[i]!.id,
        orgId,
        jobId: rows[i]!.job_id,
        event: "job.completed",
        status: "succeeded",
        attempts: 1,
        lastAttemptAt: expect.any(Number) as number,
        lastResponseStatus: 200,
        occurredAt: now,
        trace: { traceparent: `00-${traceIds[i]}-${"1".repeat(16)}-01` },
      })),
    );
    const attempts = await db.selectFrom("delivery_attempts").select("delivery_id").execute();
    expect(attempts.map((row) => row.delivery_id).sort()).toEqual(kept.map((i) => rows[i]!.id).sort());
  });

  it("splits a group larger than one message may carry into messages of at most MAX_UPDATES_PER_MESSAGE updates", async () => {
    const now = Date.now();
    const rows = await claimed(newId("org"), MAX_UPDATES_PER_MESSAGE + 1, now);
    const recorded = await recordAttempts(db, rows.map((row) => succeeded(row, "e".repeat(32))), now);
    expect(recorded.every((row) => row?.status === "succeeded")).toBe(true);
    const messages = await outbox();
    expect(messages.map((message) => message.body.updates.length)).toEqual([MAX_UPDATES_PER_MESSAGE, 1]);
    expect(messages.flatMap((message) => message.body.updates.map((update) => update.deliveryId))).toEqual(rows.map((row) => row.id));
  });

  it("writes no announcement when no lease of the group matched, and a new message id for every group", async () => {
    const now = Date.now();
    const rows = await claimed(newId("org"), 3, now);
    await db.updateTable("deliveries").set({ lease_token: "replica-b" }).where("id", "=", rows[0]!.id).execute();
    expect(await recordAttempts(db, [succeeded(rows[0]!, "a".repeat(32))], now)).toEqual([undefined]);
    expect(await outbox()).toEqual([]);

    await recordAttempts(db, [succeeded(rows[1]!, "b".repeat(32))], now);
    await recordAttempts(db, [succeeded(rows[2]!, "c".repeat(32))], now);
    const messages = await outbox();
    expect(messages.map((message) => message.body.updates.map((update) => update.deliveryId))).toEqual([[rows[1]!.id], [rows[2]!.id]]);
    expect(new Set(messages.map((message) => message.message_id)).size).toBe(2);
  });
});
