import { spawn, type ChildProcess } from "node:child_process";
import { resolve } from "node:path";
import { createInterface } from "node:readline";
import pg from "pg";
import { afterAll, afterEach, describe, expect, it } from "vitest";
import { Bus, type StreamSpec } from "@renderbus/bus";
import { testInfra, testNamespace } from "@renderbus/testing";
import { appendToStream } from "./append-to-stream.js";
import { createDatabase, type Database } from "./database.js";
import type { EventStoreTables } from "./event-store-schema.js";
import { enqueueOutbox } from "./outbox.js";
import { startOutboxRelay } from "./outbox-relay.js";
import { createEventStoreDatabase } from "./test-fixtures/event-store-database.js";

const repoRoot = resolve(import.meta.dirname, "../../..");
const relayScript = resolve(import.meta.dirname, "test-fixtures/outbox-relay-process.ts");
const STREAM: StreamSpec = { name: "RELAY_TEST", subjects: ["relaytest.>"], duplicateWindowMs: 10 * 60 * 1000 };
const WRITERS = 10;
const EVENTS_PER_WRITER = 100;
const TOTAL = WRITERS * EVENTS_PER_WRITER;

const children = new Set<ChildProcess>();
const closers: (() => Promise<void>)[] = [];

afterEach(() => {
  for (const child of children) child.kill("SIGKILL");
  children.clear();
});

afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

interface Setup {
  database: Database<EventStoreTables> & { url: string };
  bus: Bus;
  namespace: string;
  schema: string;
}

async function setUp(schema: string): Promise<Setup> {
  const namespace = testNamespace("relay");
  const database = await createEventStoreDatabase("outbox", schema, 30);
  closers.push(() => database.close());
  const bus = await Bus.connect({ url: testInfra().natsUrl, name: "outbox-relay-test", namespace });
  closers.push(async () => {
    await bus.jsm.streams.delete(bus.streamName(STREAM));
    await bus.close();
  });
  await bus.ensureStreams([STREAM]);
  return { database, bus, namespace, schema };
}

/**
 * Starts the relay in its own process. `node --import tsx` rather than the `tsx` binary, which runs the script in a
 * grandchild: a SIGKILL must hit the process that holds the database and NATS connections.
 */
async function startRelayProcess({ database, namespace, schema }: Setup, batchSize: number): Promise<ChildProcess> {
  const child = spawn(process.execPath, ["--import", "tsx", relayScript], {
    cwd: repoRoot,
    env: {
      ...process.env,
      DATABASE_URL: database.url,
      NATS_URL: testInfra().natsUrl,
      NATS_NAMESPACE: namespace,
      OUTBOX_SCHEMA: schema,
      RELAY_BATCH_SIZE: String(batchSize),
    },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.add(child);
  let stderr = "";
  child.stderr!.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
  await new Promise<void>((resolveReady, reject) => {
    createInterface({ input: child.stdout! }).on("line", (line) => line === "ready" && resolveReady());
    child.once("exit", (code) => reject(new Error(`relay process exited with ${code} before it was ready: ${stderr}`)));
  });
  return child;
}

function sigkill(child: ChildProcess): Promise<void> {
  return new Promise((resolveExit) => {
    child.once("exit", () => resolveExit());
    child.kill("SIGKILL");
    children.delete(child);
  });
}

/** One writer: each event in its own transaction, appended to the writer's stream with its outbox row. */
async function writeEvents({ database }: Setup, writer: number, pauseMs = 0): Promise<void> {
  for (let version = 0; version < EVENTS_PER_WRITER; version++) {
    await database.db.transaction().execute(async (trx) => {
      const [event] = await appendToStream(trx, `writer-${writer}`, version, [{ type: "tick", data: { writer, version } }]);
      await enqueueOutbox(trx, [{ messageId: event!.eventId, subject: "relaytest.events.tick", body: event!.data }]);
    });
    if (pauseMs > 0) await new Promise((resolveSleep) => setTimeout(resolveSleep, pauseMs));
  }
}

async function streamMessageCount({ bus }: Setup): Promise<number> {
  const info = await bus.jsm.streams.info(bus.streamName(STREAM));
  return info.state.messages;
}

async function outboxCount({ database, schema }: Setup): Promise<number> {
  const { rows } = await database.pool.query<{ count: number }>(`select count(*)::int as count from ${schema}.outbox`);
  return rows[0]!.count;
}

/** Every `Nats-Msg-Id` stored in the stream, read back with an ordered consumer. */
async function storedMessageIds(setup: Setup): Promise<string[]> {
  const expected = await streamMessageCount(setup);
  const consumer = await setup.bus.js.consumers.get(setup.bus.streamName(STREAM));
  const messages = await consumer.consume();
  const ids: string[] = [];
  const timer = setTimeout(() => void messages.close(), 20_000);
  for await (const message of messages) {
    ids.push(message.headers?.get("Nats-Msg-Id") ?? "");
    if (ids.length === expected) break;
  }
  clearTimeout(timer);
  await messages.close();
  return ids;
}

async function eventIds({ database }: Setup): Promise<string[]> {
  const rows = await database.db.selectFrom("events").select("event_id").execute();
  return rows.map((row) => row.event_id);
}

async function until(condition: () => Promise<boolean>, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolveSleep) => setTimeout(resolveSleep, 25));
  }
}

async function expectExactlyOnce(setup: Setup): Promise<void> {
  await until(async () => (await outboxCount(setup)) === 0 && (await streamMessageCount(setup)) >= TOTAL);
  // Give a lagging duplicate the chance to show up before counting.
  await new Promise((resolveSleep) => setTimeout(resolveSleep, 500));
  expect(await streamMessageCount(setup)).toBe(TOTAL);
  const ids = await storedMessageIds(setup);
  expect(ids).toHaveLength(TOTAL);
  expect(new Set(ids).size).toBe(TOTAL);
  expect(new Set(ids)).toEqual(new Set(await eventIds(setup)));
}

describe("outbox relay", () => {
  it("publishes 1,000 events from 10 concurrent writers to JetStream exactly once, although the relay is SIGKILLed mid-way and restarted", async () => {
    const setup = await setUp("relay_live");
    const first = await startRelayProcess(setup, 50);
    // A short pause per transaction keeps the writers busy long enough for the relay to die among them.
    const writers = Array.from({ length: WRITERS }, (_, writer) => writeEvents(setup, writer, 3));

    await until(async () => (await streamMessageCount(setup)) >= 200);
    await sigkill(first);
    // Killed in the middle of its work: some events are published, the rest (written or still to be written) not.
    expect(await streamMessageCount(setup)).toBeLessThan(TOTAL);

    await startRelayProcess(setup, 50);
    await Promise.all(writers);
    await expectExactlyOnce(setup);
  });

  it("drops the re-publish of rows whose relay died after publishing but before deleting them (same Nats-Msg-Id)", async () => {
    const setup = await setUp("relay_crash");
    await Promise.all(Array.from({ length: WRITERS }, (_, writer) => writeEvents(setup, writer)));
    expect(await outboxCount(setup)).toBe(TOTAL);

    // A SHARE lock lets the relay claim and publish a batch but blocks its DELETE: the crash window, held open.
    const locker = new pg.Client({ connectionString: setup.database.url });
    await locker.connect();
    closers.push(() => locker.end());
    await locker.query("begin");
    await locker.query(`lock table ${setup.schema}.outbox in share mode`);

    const relay = await startRelayProcess(setup, 200);
    await until(async () => (await streamMessageCount(setup)) === 200);
    await until(async () => {
      const { rows } = await locker.query<{ waiting: number }>(
        `select count(*)::int as waiting from pg_stat_activity where datname = current_database() and wait_event_type = 'Lock'`,
      );
      return rows[0]!.waiting > 0;
    });
    await sigkill(relay);
    // The dead relay's backend is still queued behind the lock; end it the way PostgreSQL would on its next write.
    await locker.query(
      `select pg_terminate_backend(pid) from pg_stat_activity
       where datname = current_database() and wait_event_type = 'Lock' and pid <> pg_backend_pid()`,
    );
    await locker.query("rollback");

    // Everything is still in the outbox, including the 200 rows JetStream already has.
    expect(await outboxCount(setup)).toBe(TOTAL);
    expect(await streamMessageCount(setup)).toBe(200);

    await startRelayProcess(setup, 200);
    await expectExactlyOnce(setup);
  });

  it("gets the rows of a relay frozen mid-round once PostgreSQL ends the frozen session's idle transaction", async () => {
    const setup = await setUp("relay_frozen");
    await writeEvents(setup, 0);
    // A relay's claim, then nothing: what PostgreSQL sees of a replica SIGSTOPped (or on a paused VM) between its
    // claim and its delete. The pool is configured as the services' are, with a short timeout.
    const frozen = createDatabase({ url: setup.database.url, schema: setup.schema, maxConnections: 1, idleInTransactionTimeoutMs: 1000 });
    closers.push(() => frozen.close());
    const client = await frozen.pool.connect();
    await client.query(`begin; select position from ${setup.schema}.outbox order by position for update skip locked`);

    const relay = await startOutboxRelay({ pool: setup.database.pool, schema: setup.schema, bus: setup.bus, pollIntervalMs: 100 });
    try {
      await until(async () => (await streamMessageCount(setup)) === EVENTS_PER_WRITER, 15_000);
      await relay.drained();
      expect(await outboxCount(setup)).toBe(0);
    } finally {
      await relay.stop();
    }
    // The frozen replica, woken, finds its session ended and its transaction rolled back.
    await expect(client.query("commit")).rejects.toThrow();
    client.release(true);
  });

  it("wakes on NOTIFY, long before its poll, and reports drained and backlog", async () => {
    const setup = await setUp("relay_notify");
    const relay = await startOutboxRelay({ pool: setup.database.pool, schema: setup.schema, bus: setup.bus, pollIntervalMs: 60_000 });
    try {
      await relay.drained();
      const started = Date.now();
      await setup.database.db.transaction().execute(async (trx) => {
        const [event] = await appendToStream(trx, "notify-1", 0, [{ type: "tick", data: {} }]);
        await enqueueOutbox(trx, [{ messageId: event!.eventId, subject: "relaytest.events.tick", body: event!.data }]);
      });
      await until(async () => (await streamMessageCount(setup)) === 1, 5000);
      expect(Date.now() - started).toBeLessThan(5000);
      await relay.drained();
      expect(await relay.backlog()).toBe(0);
    } finally {
      await relay.stop();
    }
  });

  it("lets a shutdown wait at most the given time for the drain when NATS does not answer, and keeps the rows", async () => {
    const setup = await setUp("relay_stuck");
    // A broker that acknowledges no publish: each times out after 1 s, as nats.js does after its own timeout.
    const timesOut = () => new Promise((_resolve, reject) => setTimeout(() => reject(new Error("TIMEOUT")), 1000));
    const stuck = new Proxy(setup.bus, { get: (target, property, receiver) => (property === "publish" ? timesOut : Reflect.get(target, property, receiver)) });
    const relay = await startOutboxRelay({ pool: setup.database.pool, schema: setup.schema, bus: stuck, pollIntervalMs: 60_000 });
    try {
      await setup.database.db.transaction().execute(async (trx) => {
        const [event] = await appendToStream(trx, "stuck-1", 0, [{ type: "tick", data: {} }]);
        await enqueueOutbox(trx, [{ messageId: event!.eventId, subject: "relaytest.events.tick", body: event!.data }]);
      });
      const outcome = await Promise.race([relay.drained(300).then(() => "gave up waiting"), new Promise((resolve) => setTimeout(() => resolve("still waiting"), 5000))]);
      expect(outcome).toBe("gave up waiting");
      expect(await outboxCount(setup)).toBe(1);
    } finally {
      await relay.stop();
    }
  });

  it("publishes at once after its LISTEN connection was lost, not on its next poll", async () => {
    const setup = await setUp("relay_relisten");
    const relay = await startOutboxRelay({ pool: setup.database.pool, schema: setup.schema, bus: setup.bus, pollIntervalMs: 120_000 });
    try {
      await relay.drained();
      const { rows } = await setup.database.pool.query<{ ended: boolean }>(
        "select pg_terminate_backend(pid) as ended from pg_stat_activity where datname = current_database() and query = $1",
        [`listen ${setup.schema}_outbox`],
      );
      expect(rows.map((row) => row.ended)).toEqual([true]);
      // Wait until it listens again (its backend is back), then write: only a NOTIFY can wake it this early.
      await until(async () => {
        const { rows: listening } = await setup.database.pool.query("select 1 from pg_stat_activity where datname = current_database() and query = $1", [`listen ${setup.schema}_outbox`]);
        return listening.length === 1;
      }, 10_000);
      await setup.database.db.transaction().execute(async (trx) => {
        const [event] = await appendToStream(trx, "relisten-1", 0, [{ type: "tick", data: {} }]);
        await enqueueOutbox(trx, [{ messageId: event!.eventId, subject: "relaytest.events.tick", body: event!.data }]);
      });
      await until(async () => (await streamMessageCount(setup)) === 1, 10_000);
    } finally {
      await relay.stop();
    }
  });

  it("shares the outbox between two relays running at once without publishing an event twice", async () => {
    const setup = await setUp("relay_pair");
    const secondBus = await Bus.connect({ url: testInfra().natsUrl, name: "outbox-relay-test-2", namespace: setup.namespace });
    closers.push(() => secondBus.close());
    const relays = await Promise.all(
      [setup.bus, secondBus].map((bus) => startOutboxRelay({ pool: setup.database.pool, schema: setup.schema, bus, batchSize: 20, pollIntervalMs: 100 })),
    );
    try {
      await Promise.all(Array.from({ length: WRITERS }, (_, writer) => writeEvents(setup, writer)));
      await expectExactlyOnce(setup);
    } finally {
      await Promise.all(relays.map((relay) => relay.stop()));
    }
  });

  it("publishes a round in two round trips to PostgreSQL (BEGIN with the claim, COMMIT with the delete)", async () => {
    const setup = await setUp("relay_trips");
    await Promise.all(Array.from({ length: 2 }, (_, writer) => writeEvents(setup, writer)));
    // Count what the relay's connections send: every query() call is one round trip.
    const counted = new pg.Pool({ connectionString: setup.database.url, max: 2, options: `-c search_path=${setup.schema},public` });
    closers.push(() => counted.end());
    let queries = 0;
    counted.on("connect", (client) => {
      const query = client.query.bind(client) as (...args: unknown[]) => unknown;
      (client as unknown as { query: (...args: unknown[]) => unknown }).query = (...args: unknown[]) => {
        queries += 1;
        return query(...args);
      };
    });
    const relay = await startOutboxRelay({ pool: counted, schema: setup.schema, bus: setup.bus, batchSize: 500, pollIntervalMs: 60_000 });
    try {
      await until(async () => (await streamMessageCount(setup)) === EVENTS_PER_WRITER * 2, 10_000);
      await relay.drained();
    } finally {
      await relay.stop();
    }
    // One round publishing all 200 (2 trips), then the empty round that drained() asks for (begin+claim, commit).
    expect(queries).toBeLessThanOrEqual(4);
    expect(await setup.database.db.selectFrom("outbox").select("position").execute()).toEqual([]);
  });
});
