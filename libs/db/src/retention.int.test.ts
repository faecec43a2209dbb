import { sql, type Kysely } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "./database.js";
import type { EventStoreTables } from "./event-store-schema.js";
import { deleteInBatches, startRetentionSweeper } from "./retention.js";
import { createEventStoreDatabase } from "./test-fixtures/event-store-database.js";

const SCHEMA = "retention_test";
let database: Database<EventStoreTables>;
let db: Kysely<any>;

beforeAll(async () => {
  database = await createEventStoreDatabase("retention", SCHEMA);
  db = database.db;
  await sql`create table markers (id integer primary key, created_at bigint not null)`.execute(db);
  // Rows deleted by each DELETE statement, in order (a statement-level trigger over the transition table).
  await sql`create table delete_statements (position serial, deleted integer not null)`.execute(db);
  await sql.raw(`
    create function ${SCHEMA}.log_delete() returns trigger language plpgsql as $$
    begin insert into ${SCHEMA}.delete_statements (deleted) select count(*) from gone; return null; end $$;
    create trigger markers_deleted after delete on ${SCHEMA}.markers referencing old table as gone
      for each statement execute function ${SCHEMA}.log_delete();
  `).execute(db);
});
afterAll(async () => database?.close());

/** `old` rows at time 1 and `recent` rows at time 1,000,000, replacing whatever the table held. */
async function fill(old: number, recent: number): Promise<void> {
  await sql`truncate markers`.execute(db);
  await sql`insert into markers select n, case when n <= ${old} then 1 else 1000000 end from generate_series(1, ${old + recent}) n`.execute(db);
}
const remaining = async () => (await sql<{ old: number; recent: number }>`
  select count(*) filter (where created_at = 1)::int as old, count(*) filter (where created_at > 1)::int as recent from markers`.execute(db)).rows[0]!;

describe("deleteInBatches", () => {
  it("deletes every matching row, batchSize per statement, and nothing else", async () => {
    await fill(2_500, 10);
    await sql`truncate delete_statements`.execute(db);
    const deleted = await deleteInBatches(db, "markers", sql<boolean>`created_at < ${500}`, { batchSize: 1_000 });
    expect(deleted).toBe(2_500);
    // Never one statement over the whole backlog: each took at most one batch.
    const statements = await sql<{ deleted: number }>`select deleted from delete_statements order by position`.execute(db);
    expect(statements.rows.map((row) => row.deleted)).toEqual([1_000, 1_000, 500]);
    expect(await remaining()).toEqual({ old: 0, recent: 10 });
  });

  it("lets replicas sweep the same table at once: they split the rows, none fails, nothing is deleted twice", async () => {
    await fill(5_000, 10);
    const counts = await Promise.all([1, 2, 3].map(() => deleteInBatches(db, "markers", sql<boolean>`created_at < ${500}`, { batchSize: 200 })));
    // A replica whose batch came back short (rows held by another) stops early; a sweep after them finds the rest.
    const rest = await deleteInBatches(db, "markers", sql<boolean>`created_at < ${500}`);
    expect(counts.reduce((sum, count) => sum + count, 0) + rest).toBe(5_000);
    expect(await remaining()).toEqual({ old: 0, recent: 10 });
  });

  it("stops between statements once the service is stopping", async () => {
    await fill(3_000, 0);
    expect(await deleteInBatches(db, "markers", sql<boolean>`true`, { batchSize: 1_000, stopping: () => true })).toBe(1_000);
  });

  it("refuses a table name that is not a plain identifier", async () => {
    await expect(deleteInBatches(db, "markers; drop table events", sql<boolean>`true`)).rejects.toThrow(/invalid SQL identifier/);
  });
});

describe("startRetentionSweeper", () => {
  it("runs every step, logs a failing one and still runs the others", async () => {
    await fill(10, 1);
    const warnings: string[] = [];
    const logger = { warn: (_: unknown, message: string) => warnings.push(message), info: () => undefined } as never;
    const sweeper = startRetentionSweeper({
      intervalMs: 3_600_000,
      logger,
      steps: [
        { name: "broken", prune: async () => Promise.reject(new Error("boom")) },
        { name: "markers", prune: (now, stopping) => deleteInBatches(db, "markers", sql<boolean>`created_at < ${now}`, { stopping }) },
      ],
    });
    try {
      expect(await sweeper.sweep(500)).toEqual({ markers: 10 });
      expect(warnings).toEqual(["retention step failed; the next sweep retries it"]);
      expect(await remaining()).toEqual({ old: 0, recent: 1 });
    } finally {
      await sweeper.stop();
    }
  });
});
