import { sql, type Kysely } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { appendToStream, ConcurrencyError, type StoredEvent } from "./append-to-stream.js";
import type { Database } from "./database.js";
import type { EventStoreTables } from "./event-store-schema.js";
import { readAll } from "./read-all.js";
import { readStream } from "./read-stream.js";
import { createEventStoreDatabase } from "./test-fixtures/event-store-database.js";

const SCHEMA = "es_test";
let database: Database<EventStoreTables>;
let db: Kysely<EventStoreTables>;

beforeAll(async () => {
  database = await createEventStoreDatabase("eventstore", SCHEMA);
  db = database.db;
});

afterAll(async () => {
  await database?.close();
});

/** A promise with its resolver outside, to hold a transaction open at a chosen point. */
function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

async function until(condition: () => Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

/** True once some backend of this database is blocked on a lock (the second writer waiting on the first). */
async function someoneWaitsOnALock(): Promise<boolean> {
  const { rows } = await sql<{ waiting: number }>`
    select count(*)::int as waiting from pg_stat_activity
    where datname = current_database() and wait_event_type = 'Lock'`.execute(db);
  return (rows[0]?.waiting ?? 0) > 0;
}

describe("appendToStream", () => {
  it("stores events at versions 1..n and readStream returns them in version order", async () => {
    await db.transaction().execute((trx) => appendToStream(trx, "order-1", 0, [{ type: "a", data: { n: 1 } }, { type: "b", data: { n: 2 } }]));
    await db.transaction().execute((trx) => appendToStream(trx, "order-1", 2, [{ type: "c", data: { n: 3 } }]));

    const events = await readStream(db, "order-1");
    expect(events.map((event) => [event.version, event.type, event.data])).toEqual([
      [1, "a", { n: 1 }],
      [2, "b", { n: 2 }],
      [3, "c", { n: 3 }],
    ]);
    expect(events.every((event) => event.eventId.startsWith("evt_") && event.streamId === "order-1")).toBe(true);
    expect(await readStream(db, "no-such-stream")).toEqual([]);
  });

  it("lets exactly one of two truly concurrent appends at the same expected version win; the other gets ConcurrencyError", async () => {
    await db.transaction().execute((trx) => appendToStream(trx, "race-1", 0, [{ type: "created", data: {} }]));

    // Writer A inserts version 2 and holds its transaction open; writer B inserts version 2 on another connection
    // and blocks on A's uncommitted index entry. Only then does A commit, so the two really overlap.
    const aInserted = gate();
    const aMayCommit = gate();
    const writerA = db.transaction().execute(async (trx) => {
      const stored = await appendToStream(trx, "race-1", 1, [{ type: "by-a", data: {} }]);
      aInserted.open();
      await aMayCommit.promise;
      return stored;
    });
    await aInserted.promise;
    const writerB = db.transaction().execute((trx) => appendToStream(trx, "race-1", 1, [{ type: "by-b", data: {} }, { type: "by-b2", data: {} }]));
    const writerBOutcome = writerB.then(
      () => "won" as const,
      (error: unknown) => error,
    );
    await until(someoneWaitsOnALock);
    aMayCommit.open();

    await expect(writerA).resolves.toHaveLength(1);
    const bError = await writerBOutcome;
    expect(bError).toBeInstanceOf(ConcurrencyError);
    expect(bError).toMatchObject({ streamId: "race-1", expectedVersion: 1 });

    const events = await readStream(db, "race-1");
    expect(events.map((event) => [event.version, event.type])).toEqual([
      [1, "created"],
      [2, "by-a"],
    ]);
  });

  it("keeps a stream gap-free and duplicate-free under many concurrent writers that retry on ConcurrencyError", async () => {
    const writers = 8;
    const appendsPerWriter = 10;
    let conflicts = 0;
    const write = async (writer: number) => {
      for (let i = 0; i < appendsPerWriter; i++) {
        for (;;) {
          try {
            await db.transaction().execute(async (trx) => {
              const current = await readStream(trx, "busy-1");
              await appendToStream(trx, "busy-1", current.length, [{ type: "tick", data: { writer, i } }]);
            });
            break;
          } catch (error) {
            if (!(error instanceof ConcurrencyError)) throw error;
            conflicts += 1;
          }
        }
      }
    };
    await Promise.all(Array.from({ length: writers }, (_, writer) => write(writer)));

    const events = await readStream(db, "busy-1");
    const total = writers * appendsPerWriter;
    expect(events.map((event) => event.version)).toEqual(Array.from({ length: total }, (_, index) => index + 1));
    expect(new Set(events.map((event) => `${(event.data as { writer: number }).writer}:${(event.data as { i: number }).i}`)).size).toBe(total);
    // With 8 writers racing on one stream some of them must have lost at least once, or the test proved nothing.
    expect(conflicts).toBeGreaterThan(0);
  });

  it("leaves nothing behind from a transaction that lost the race", async () => {
    await db.transaction().execute((trx) => appendToStream(trx, "loser-1", 0, [{ type: "created", data: {} }]));
    await expect(db.transaction().execute((trx) => appendToStream(trx, "loser-1", 0, [{ type: "again", data: {} }]))).rejects.toBeInstanceOf(ConcurrencyError);
    expect((await readStream(db, "loser-1")).map((event) => event.type)).toEqual(["created"]);
  });
});

describe("readAll", () => {
  it("returns events of all streams by global position after a given position", async () => {
    const start = await lastPosition();
    await db.transaction().execute((trx) => appendToStream(trx, "all-a", 0, [{ type: "a1", data: {} }]));
    await db.transaction().execute((trx) => appendToStream(trx, "all-b", 0, [{ type: "b1", data: {} }, { type: "b2", data: {} }]));
    await db.transaction().execute((trx) => appendToStream(trx, "all-a", 1, [{ type: "a2", data: {} }]));

    let events: StoredEvent[] = [];
    await until(async () => (events = await readAll(db, { after: start })).length === 4);
    expect(events.map((event) => event.type)).toEqual(["a1", "b1", "b2", "a2"]);
    const positions = events.map((event) => event.globalPosition);
    expect(positions).toEqual([...positions].sort((x, y) => x - y));

    const afterSecond = await readAll(db, { after: positions[1]!, limit: 1 });
    expect(afterSecond.map((event) => event.type)).toEqual(["b2"]);
  });

  it("does not skip an in-flight transaction holding a lower position: a later commit is held back until it commits", async () => {
    const start = await lastPosition();
    const aInserted = gate();
    const aMayCommit = gate();
    // Transaction A takes the lower position and stays open.
    const writerA = db.transaction().execute(async (trx) => {
      const [stored] = await appendToStream(trx, "inflight-a", 0, [{ type: "from-a", data: {} }]);
      aInserted.open();
      await aMayCommit.promise;
      return stored!;
    });
    await aInserted.promise;
    // Transaction B takes a higher position and commits first.
    const [storedB] = await db.transaction().execute((trx) => appendToStream(trx, "inflight-b", 0, [{ type: "from-b", data: {} }]));

    // B is committed and visible, but returning it now would let a reader remember B's position and skip A forever.
    const whileAInFlight = await readAll(db, { after: start });
    expect(whileAInFlight.map((event) => event.type)).not.toContain("from-b");
    expect(whileAInFlight).toEqual([]);

    aMayCommit.open();
    const storedA = await writerA;
    expect(storedA.globalPosition).toBeLessThan(storedB!.globalPosition);

    let events: StoredEvent[] = [];
    // Another transaction anywhere on the server also holds readers back briefly, hence the wait.
    await until(async () => (events = await readAll(db, { after: start })).length === 2);
    expect(events.map((event) => event.type)).toEqual(["from-a", "from-b"]);
  });
});

async function lastPosition(): Promise<number> {
  const { rows } = await sql<{ position: number | null }>`select max(global_position)::int8 as position from events`.execute(db);
  return rows[0]?.position ?? 0;
}
