import { sql, type Kysely } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Database } from "./database.js";
import type { EventStoreTables } from "./event-store-schema.js";
import { preparedSql } from "./prepared-statements.js";
import { createEventStoreDatabase } from "./test-fixtures/event-store-database.js";

const SCHEMA = "prepared_test";
let database: Database<EventStoreTables>;
let db: Kysely<any>;

beforeAll(async () => {
  // One connection: every statement below runs on the same session, whose prepared statements it can list.
  database = await createEventStoreDatabase("prepared", SCHEMA, 1);
  db = database.db;
  await sql`create table items (id integer primary key, name text not null)`.execute(db);
});
afterAll(async () => database?.close());

const preparedOnSession = async () =>
  (await sql<{ name: string; statement: string }>`select name, statement from pg_prepared_statements order by prepare_time`.execute(db)).rows;

const insertItem = (id: number, name: string) => preparedSql<{ id: number; name: string }>`insert into items (id, name) values (${id}, ${name}) returning *`.execute(db);

describe("preparedSql", () => {
  it("prepares a statement once per connection and runs it by name with each call's values", async () => {
    const first = await insertItem(1, "one");
    const second = await insertItem(2, "two");
    expect(first.rows).toEqual([{ id: 1, name: "one" }]);
    expect(second.rows).toEqual([{ id: 2, name: "two" }]);
    const prepared = (await preparedOnSession()).filter((s) => s.statement.includes("insert into items"));
    expect(prepared).toHaveLength(1);
    expect(prepared[0]!.name).toMatch(/^rb_[0-9a-f]{20}_0$/);
  });

  it("leaves plain sql unprepared", async () => {
    await sql`select count(*) from items where id > ${0}`.execute(db);
    expect((await preparedOnSession()).some((s) => s.statement.includes("count(*) from items"))).toBe(false);
  });

  it("prepares the statement again when a migration changed its result (returning * after a new column)", async () => {
    await insertItem(3, "three");
    await sql`alter table items add column colour text`.execute(db);
    // PostgreSQL refuses the old statement ("cached plan must not change result type"); the call is made again.
    const after = await insertItem(4, "four");
    expect(after.rows).toEqual([{ id: 4, name: "four", colour: null }]);
    const names = (await preparedOnSession()).filter((s) => s.statement.includes("insert into items")).map((s) => s.name);
    expect(names.map((name) => name.slice(-2))).toEqual(["_0", "_1"]);
  });

  it("inside a transaction, fails that call (the error aborted the transaction) and serves the next one", async () => {
    await insertItem(5, "five");
    await sql`alter table items add column size integer`.execute(db);
    await expect(db.transaction().execute((trx) => preparedSql`insert into items (id, name) values (${6}, ${"six"}) returning *`.execute(trx))).rejects.toMatchObject({ code: "0A000" });
    expect((await sql<{ n: number }>`select count(*)::int as n from items where id = 6`.execute(db)).rows[0]!.n).toBe(0);
    const retried = await db.transaction().execute((trx) => preparedSql<{ id: number }>`insert into items (id, name) values (${6}, ${"six"}) returning *`.execute(trx));
    expect(retried.rows).toEqual([{ id: 6, name: "six", colour: null, size: null }]);
  });
});
