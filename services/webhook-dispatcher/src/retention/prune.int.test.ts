import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDatabase, migrateToLatest, type Database } from "@renderbus/db";
import { createTestDatabase } from "@renderbus/testing";
import { migrations } from "../../migrations/index.js";
import { DISPATCHER_SCHEMA, type DispatcherTables } from "../database.js";
import { configSchema } from "../config.js";
import { dispatcherRetentionSteps } from "./prune.js";

const DAY = 24 * 60 * 60 * 1000;
const NOW = Date.now();

let database: Database<DispatcherTables>;
const db = () => database.db;
// The defaults: deliveries 30 days, processed-event markers and completed batches 14 days.
const sweep = async (now = NOW) => {
  const deleted: Record<string, number> = {};
  const config = configSchema.parse({});
  const steps = dispatcherRetentionSteps(db(), {
    deliveryRetentionMs: config.DELIVERY_RETENTION_DAYS * DAY,
    processedEventRetentionMs: config.PROCESSED_EVENT_RETENTION_DAYS * DAY,
  });
  for (const step of steps) deleted[step.name] = await step.prune(now, () => false);
  return deleted;
};

beforeAll(async () => {
  database = createDatabase<DispatcherTables>({ url: await createTestDatabase("dispatcherretention"), schema: DISPATCHER_SCHEMA, maxConnections: 2 });
  await migrateToLatest(database.db as never, DISPATCHER_SCHEMA, migrations);
});
afterAll(async () => database?.close());

function delivery(id: string, status: "pending" | "succeeded" | "failed" | "skipped", ageDays: number, extra: Partial<DispatcherTables["deliveries"]> = {}) {
  const at = NOW - ageDays * DAY;
  return {
    id,
    org_id: "org_retention",
    event: "job.completed",
    source_event_id: `event-${id}`,
    job_id: null,
    batch_id: null,
    url: "https://example.com/hook",
    body: "{}",
    status,
    attempts: 1,
    chain_attempts: 1,
    next_attempt_at: status === "pending" ? at : null,
    lease_until: null,
    lease_token: null,
    last_attempt_at: at,
    last_response_status: 200,
    last_error: null,
    event_at: at,
    first_attempt_at: at,
    created_at: at,
    ...extra,
  };
}

describe("webhook-dispatcher retention sweep (SECURITY-AUDIT finding 21)", () => {
  it("deletes finished deliveries past 30 days with their attempt logs, and keeps younger, pending and recently retried ones", async () => {
    await db()
      .insertInto("deliveries")
      .values([
        delivery("del_old_ok", "succeeded", 31),
        delivery("del_old_failed", "failed", 45),
        delivery("del_old_pending", "pending", 40),
        delivery("del_recent", "succeeded", 29),
        // Created long ago, retried by hand yesterday: its fresh attempt log stays.
        delivery("del_retried", "failed", 40, { last_attempt_at: NOW - DAY }),
      ] as never)
      .execute();
    const attempt = (deliveryId: string, attemptNumber: number, ageDays: number) => ({
      delivery_id: deliveryId,
      attempt: attemptNumber,
      started_at: NOW - ageDays * DAY,
      response_status: 200,
      error: null,
      latency_ms: 5,
      response_excerpt: "ok",
    });
    await db()
      .insertInto("delivery_attempts")
      .values([attempt("del_old_ok", 1, 31), attempt("del_old_failed", 1, 45), attempt("del_old_failed", 2, 44), attempt("del_recent", 1, 29), attempt("del_retried", 1, 1)])
      .execute();

    expect((await sweep()).deliveries).toBe(2);
    const deliveries = await db().selectFrom("deliveries").select("id").orderBy("id").execute();
    expect(deliveries.map((row) => row.id)).toEqual(["del_old_pending", "del_recent", "del_retried"]);
    const attempts = await db().selectFrom("delivery_attempts").select(["delivery_id", "attempt"]).orderBy("delivery_id").execute();
    expect(attempts).toEqual([
      { delivery_id: "del_recent", attempt: 1 },
      { delivery_id: "del_retried", attempt: 1 },
    ]);
  });

  it("deletes a skipped delivery past DELIVERY_RETENTION_DAYS and keeps a younger one", async () => {
    // Stored while its endpoint was disabled: no attempt, nothing owed, never due (the body holds signed result URLs).
    const skipped = (id: string, ageDays: number) => delivery(id, "skipped", ageDays, { attempts: 0, chain_attempts: 0, last_attempt_at: null, last_response_status: null, first_attempt_at: null });
    await db()
      .insertInto("deliveries")
      .values([skipped("del_old_skipped", 31), skipped("del_young_skipped", 29)] as never)
      .execute();
    expect((await sweep()).deliveries).toBe(1);
    const left = await db().selectFrom("deliveries").select("id").where("status", "=", "skipped").execute();
    expect(left.map((row) => row.id)).toEqual(["del_young_skipped"]);
  });

  it("deletes processed-event markers past 14 days and keeps younger ones", async () => {
    await db()
      .insertInto("processed_events")
      .values([
        { event_id: "old", processed_at: NOW - 14 * DAY - 1 },
        { event_id: "young", processed_at: NOW - 13 * DAY },
      ])
      .execute();
    expect((await sweep()).processed_events).toBe(1);
    expect((await db().selectFrom("processed_events").select("event_id").execute()).map((row) => row.event_id)).toEqual(["young"]);
  });

  it("deletes batches completed more than 14 days ago with their terminal jobs; an unfinished batch stays however old", async () => {
    const batch = (batchId: string, createdDaysAgo: number, completedDaysAgo: number | null) => ({
      batch_id: batchId,
      org_id: "org_retention",
      job_count: 2,
      created_at: NOW - createdDaysAgo * DAY,
      completed_at: completedDaysAgo === null ? null : NOW - completedDaysAgo * DAY,
    });
    await db().insertInto("batches").values([batch("batch_old", 20, 15), batch("batch_young", 20, 10), batch("batch_open", 60, null)]).execute();
    const terminal = (batchId: string, jobId: string) => ({ batch_id: batchId, job_id: jobId, outcome: "completed" as const, recorded_at: NOW - 20 * DAY });
    await db()
      .insertInto("batch_terminal_jobs")
      .values([terminal("batch_old", "job_1"), terminal("batch_old", "job_2"), terminal("batch_young", "job_3"), terminal("batch_young", "job_4"), terminal("batch_open", "job_5")])
      .execute();

    const deleted = await sweep();
    expect(deleted).toMatchObject({ batch_terminal_jobs: 2, batches: 1 });
    expect((await db().selectFrom("batches").select("batch_id").orderBy("batch_id").execute()).map((row) => row.batch_id)).toEqual(["batch_open", "batch_young"]);
    expect((await db().selectFrom("batch_terminal_jobs").select("job_id").orderBy("job_id").execute()).map((row) => row.job_id)).toEqual(["job_3", "job_4", "job_5"]);
  });

  it("deletes job.progress throttle rows untouched for an hour and keeps recent ones", async () => {
    const row = (jobId: string, ageMs: number) => ({ org_id: "org_retention", endpoint_id: "ep_1", job_id: jobId, last_sent_at: NOW - ageMs });
    await db().insertInto("progress_throttle").values([row("job_old", 2 * 60 * 60 * 1000), row("job_running", 5000)]).execute();
    const deleted = await sweep();
    expect(deleted.progress_throttle).toBe(1);
    expect((await db().selectFrom("progress_throttle").select("job_id").execute()).map((each) => each.job_id)).toEqual(["job_running"]);
  });

  it("refuses a processed-event retention shorter than JetStream could redeliver an event (8 days at least)", () => {
    expect(() => configSchema.parse({ PROCESSED_EVENT_RETENTION_DAYS: "7" })).toThrow();
    expect(configSchema.parse({}).PROCESSED_EVENT_RETENTION_DAYS).toBe(14);
  });
});
