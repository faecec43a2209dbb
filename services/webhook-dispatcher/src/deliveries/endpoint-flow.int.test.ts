import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { sql, type Kysely } from "kysely";
import { createDatabase, migrateToLatest, type Database } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import { createTestDatabase } from "@renderbus/testing";
import { migrations } from "../../migrations/index.js";
import { DISPATCHER_SCHEMA, type DispatcherTables } from "../database.js";
import { claimDueDeliveries } from "./delivery-queue.js";
import { claimGatedDeliveries, hasGatedWork, RATE_SLOT_HORIZON_MS } from "./endpoint-flow.js";
import { insertDeliveries, type NewDelivery } from "./insert-deliveries.js";

let database: Database<DispatcherTables>;
let db: Kysely<DispatcherTables>;
const LEASE_MS = 10_000;

beforeAll(async () => {
  // Enough connections for the claims below to really run side by side.
  database = createDatabase<DispatcherTables>({ url: await createTestDatabase("dispatcherflow"), schema: DISPATCHER_SCHEMA, maxConnections: 8 });
  db = database.db;
  await migrateToLatest(db, DISPATCHER_SCHEMA, migrations);
});
afterAll(async () => database?.close());
beforeEach(async () => void (await sql`truncate deliveries, endpoints, endpoint_queues cascade`.execute(db)));

async function endpoint(orgId: string, settings: { ordering?: "none" | "fifo"; rate?: number | null } = {}): Promise<string> {
  const id = newId("ep");
  await sql`insert into endpoints (org_id, id, url, events, ordering, rate_limit_per_second, created_at, updated_at)
            values (${orgId}, ${id}, 'http://127.0.0.1:9/', ${["*"]}::text[], ${settings.ordering ?? "none"}, ${settings.rate ?? null}, 0, 0)`.execute(db);
  return id;
}

function delivery(orgId: string, endpointId: string, ordered: boolean, sourceEventId = newId("evt")): NewDelivery {
  return { orgId, event: "job.running", sourceEventId, jobId: newId("job"), batchId: null, url: "http://127.0.0.1:9/", body: "{}", eventAt: 0, endpointId, ordered };
}

const gated = (now: number, token = "replica-a", limit = 10, orgMaxInFlight = 8) => claimGatedDeliveries(db, { limit, orgMaxInFlight, leaseMs: LEASE_MS, leaseToken: token, now });
const main = async (now: number, token = "replica-a") => (await claimDueDeliveries(db, { limit: 10, orgMaxInFlight: 8, leaseMs: LEASE_MS, leaseToken: token, now })).rows;
const sequences = (rows: Array<{ sequence: number | null }>) => rows.map((row) => row.sequence);

describe("FIFO sequences", () => {
  it("numbers an ordered endpoint's deliveries from 1 in insert order; other endpoints get none", async () => {
    const orgId = newId("org");
    const [fifo, plain] = [await endpoint(orgId, { ordering: "fifo" }), await endpoint(orgId)];
    const first = await insertDeliveries(db, [delivery(orgId, fifo, true), delivery(orgId, plain, false), delivery(orgId, fifo, true)]);
    const second = await insertDeliveries(db, [delivery(orgId, fifo, true)]);
    expect(sequences(first)).toEqual([1, null, 2]);
    expect(sequences(second)).toEqual([3]);
  });

  it("gives a redelivered event no number (no gap), and concurrent inserters contiguous numbers", async () => {
    const orgId = newId("org");
    const fifo = await endpoint(orgId, { ordering: "fifo" });
    const again = newId("evt");
    await insertDeliveries(db, [delivery(orgId, fifo, true, again)]);
    expect(await insertDeliveries(db, [delivery(orgId, fifo, true, again)])).toEqual([]);
    await Promise.all(Array.from({ length: 20 }, () => insertDeliveries(db, [delivery(orgId, fifo, true), delivery(orgId, fifo, true)])));
    const { rows } = await sql<{ sequence: number }>`select sequence from deliveries where endpoint_id = ${fifo} order by sequence`.execute(db);
    expect(rows.map((row) => row.sequence)).toEqual(Array.from({ length: 41 }, (_, i) => i + 1));
  });

  it("never leases an ordered delivery at insert: only the gated claim takes it", async () => {
    const orgId = newId("org");
    const fifo = await endpoint(orgId, { ordering: "fifo" });
    const now = Date.now();
    const rows = await insertDeliveries(db, [delivery(orgId, fifo, true)], { now, lease: { token: "replica-a", until: now + LEASE_MS, limit: 10, orgMaxInFlight: 8 } });
    expect(rows[0]?.lease_token).toBeNull();
    expect(await main(now)).toEqual([]);
    expect((await gated(now)).map((claim) => claim.row.id)).toEqual([rows[0]?.id]);
  });
});

describe("claiming a FIFO endpoint", () => {
  it("offers only its head, holds the queue while the head waits for a retry, and moves on once it is finished", async () => {
    const orgId = newId("org");
    const fifo = await endpoint(orgId, { ordering: "fifo" });
    const now = Date.now();
    const rows = await insertDeliveries(db, [1, 2, 3].map(() => delivery(orgId, fifo, true)), { now });
    expect(await hasGatedWork(db, now)).toBe(true);
    // Before any gated delivery is due (every one in this database is due at its insert time or later), none counts.
    expect(await hasGatedWork(db, 0)).toBe(false);
    expect((await gated(now)).map((claim) => claim.row.sequence)).toEqual([1]);
    // In flight: nothing else of the endpoint, for this replica or another.
    expect(await gated(now + 1, "replica-b")).toEqual([]);
    // The attempt failed: retry in 5 s; the head holds the queue meanwhile.
    await sql`update deliveries set lease_until = null, lease_token = null, next_attempt_at = ${now + 5000} where id = ${rows[0]!.id}`.execute(db);
    expect(await gated(now + 10, "replica-b")).toEqual([]);
    expect((await gated(now + 5000, "replica-b")).map((claim) => claim.row.sequence)).toEqual([1]);
    // Failed for good (retries exhausted): the next one is the head.
    await sql`update deliveries set status = 'failed', lease_until = null, lease_token = null, next_attempt_at = null where id = ${rows[0]!.id}`.execute(db);
    expect((await gated(now + 5001)).map((claim) => claim.row.sequence)).toEqual([2]);
  });

  it("is not held by a test event, which is sent outside the queue (even one whose sender died)", async () => {
    const orgId = newId("org");
    const fifo = await endpoint(orgId, { ordering: "fifo" });
    const now = Date.now();
    await insertDeliveries(db, [{ ...delivery(orgId, fifo, false), event: "webhook.test", sourceEventId: null }], { now: now - 10, queued: false });
    await insertDeliveries(db, [delivery(orgId, fifo, true)], { now });
    expect((await gated(now)).map((claim) => claim.row.sequence)).toEqual([1]);
  });

  it("takes a crashed holder's head over once its lease has run out", async () => {
    const orgId = newId("org");
    const fifo = await endpoint(orgId, { ordering: "fifo" });
    const now = Date.now();
    await insertDeliveries(db, [1, 2].map(() => delivery(orgId, fifo, true)), { now });
    expect((await gated(now, "crashed")).map((claim) => claim.row.sequence)).toEqual([1]);
    expect(await gated(now + LEASE_MS, "replica-b")).toEqual([]);
    expect((await gated(now + LEASE_MS + RATE_SLOT_HORIZON_MS + 1, "replica-b")).map((claim) => claim.row.sequence)).toEqual([1]);
  });

  it("never has two deliveries of one endpoint leased, however many replicas claim at once", async () => {
    const orgId = newId("org");
    const fifo = await endpoint(orgId, { ordering: "fifo" });
    const now = Date.now();
    const rows = await insertDeliveries(db, Array.from({ length: 5 }, () => delivery(orgId, fifo, true)), { now });
    // A manual retry of an older delivery makes it the head while another one is in flight: still one at a time.
    await sql`update deliveries set status = 'succeeded', next_attempt_at = null where id = ${rows[0]!.id}`.execute(db);
    expect((await gated(now)).map((claim) => claim.row.sequence)).toEqual([2]);
    await sql`update deliveries set status = 'pending', next_attempt_at = ${now} where id = ${rows[0]!.id}`.execute(db);
    for (let round = 0; round < 5; round += 1) {
      const claims = (await Promise.all(Array.from({ length: 6 }, (_, i) => gated(now + 1, `replica-${i}`)))).flat();
      expect(claims).toEqual([]);
    }
    await sql`update deliveries set status = 'succeeded', lease_until = null, lease_token = null, next_attempt_at = null where lease_token is not null`.execute(db);
    for (let round = 0; round < 4; round += 1) {
      const claims = (await Promise.all(Array.from({ length: 6 }, (_, i) => gated(now + 2, `replica-${i}`)))).flat();
      expect(claims).toHaveLength(1);
      await sql`update deliveries set status = 'succeeded', lease_until = null, lease_token = null, next_attempt_at = null where id = ${claims[0]!.row.id}`.execute(db);
    }
    expect(await gated(now + 3)).toEqual([]);
  });

  it("does not hold other endpoints back while it is blocked", async () => {
    const orgId = newId("org");
    const [fifo, plain] = [await endpoint(orgId, { ordering: "fifo" }), await endpoint(orgId)];
    const now = Date.now();
    const [head] = await insertDeliveries(db, [delivery(orgId, fifo, true), delivery(orgId, fifo, true)], { now });
    await sql`update deliveries set next_attempt_at = ${now + 60_000} where id = ${head!.id}`.execute(db);
    const others = await insertDeliveries(db, [delivery(orgId, plain, false), delivery(orgId, plain, false)], { now });
    expect(await gated(now)).toEqual([]);
    expect((await main(now)).map((row) => row.id).sort()).toEqual(others.map((row) => row.id).sort());
  });
});

describe("claiming a rate-limited endpoint", () => {
  it("gives out one start slot per 1/rate s, at most a second ahead, across replicas; the backlog waits", async () => {
    const orgId = newId("org");
    const limited = await endpoint(orgId, { rate: 5 });
    const now = Date.now();
    await insertDeliveries(db, Array.from({ length: 20 }, () => delivery(orgId, limited, false)), { now });
    expect(await main(now)).toEqual([]);
    const claims = (await Promise.all(Array.from({ length: 4 }, (_, i) => gated(now, `replica-${i}`)))).flat();
    // The first claim fills the second ahead of it (5 slots at 5/s). A replica whose claim starts only after that one
    // committed (a loaded machine) is a moment later, so the slot a second after the first may be inside its horizon.
    expect(claims.length).toBeGreaterThanOrEqual(5);
    expect(claims.length).toBeLessThanOrEqual(6);
    // Whoever claimed them, no two slots are closer than 1/rate, and none is more than a second after its claim.
    const next = await gated(now);
    const slots = [...claims, ...next].map((claim) => claim.slotAt!).sort((a, b) => a - b);
    for (let i = 1; i < slots.length; i += 1) expect(slots[i]! - slots[i - 1]!).toBeGreaterThanOrEqual(199.9);
    for (const claim of [...claims, ...next]) expect(claim.delayMs).toBeLessThanOrEqual(1000);
    // The rest of the backlog waits, unleased.
    const { rows } = await sql<{ n: number }>`select count(*)::int as n from deliveries where status = 'pending' and lease_token is null`.execute(db);
    expect(rows[0]?.n).toBe(20 - claims.length - next.length);
  });

  it("keeps within the org's in-flight cap, counting the org's other leases", async () => {
    const orgId = newId("org");
    const [limited, plain] = [await endpoint(orgId, { rate: 100 }), await endpoint(orgId)];
    const now = Date.now();
    await insertDeliveries(db, [delivery(orgId, plain, false)], { now });
    expect(await main(now)).toHaveLength(1);
    await insertDeliveries(db, Array.from({ length: 10 }, () => delivery(orgId, limited, false)), { now });
    expect(await gated(now, "replica-a", 10, 4)).toHaveLength(3);
    expect(await gated(now, "replica-b", 10, 4)).toEqual([]);
  });

  it("combines with FIFO: one at a time, each in its own slot", async () => {
    const orgId = newId("org");
    const both = await endpoint(orgId, { ordering: "fifo", rate: 1 });
    const now = Date.now();
    await insertDeliveries(db, [1, 2].map(() => delivery(orgId, both, true)), { now });
    const [first] = await gated(now);
    expect(first?.row.sequence).toBe(1);
    await sql`update deliveries set status = 'succeeded', lease_until = null, lease_token = null, next_attempt_at = null where id = ${first!.row.id}`.execute(db);
    // The next slot is a second after the first: inside the horizon, so it is given with its wait.
    const [second] = await gated(now);
    expect(second?.row.sequence).toBe(2);
    expect(second!.delayMs).toBeGreaterThan(first!.delayMs + 500);
  });
});
