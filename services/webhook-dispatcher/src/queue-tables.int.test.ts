import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDatabase, migrateToLatest, type Database } from "@renderbus/db";
import { createTestDatabase } from "@renderbus/testing";
import { migrations } from "../migrations/index.js";
import { DISPATCHER_SCHEMA } from "./database.js";

let database: Database<unknown>;
beforeAll(async () => {
  database = createDatabase({ url: await createTestDatabase("queuetables"), schema: DISPATCHER_SCHEMA, maxConnections: 2 });
  await migrateToLatest(database.db as never, DISPATCHER_SCHEMA, migrations);
});
afterAll(async () => database?.close());

describe("queue tables", () => {
  it("are vacuumed after every 5,000 dead rows, not after 20% of the table", async () => {
    const { rows } = await sql<{ relname: string; reloptions: string[] | null }>`
      select relname, reloptions from pg_class
      where relnamespace = 'dispatcher'::regnamespace and relname in ('deliveries', 'outbox') order by relname`.execute(database.db);
    expect(rows.map((row) => row.relname)).toEqual(["deliveries", "outbox"]);
    for (const row of rows) {
      expect(row.reloptions).toEqual(
        expect.arrayContaining(["autovacuum_vacuum_scale_factor=0", "autovacuum_vacuum_threshold=5000", "autovacuum_vacuum_cost_delay=0"]),
      );
    }
  });
});
