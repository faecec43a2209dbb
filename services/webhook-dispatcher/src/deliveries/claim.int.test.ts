import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { sql, type Kysely } from "kysely";
import { createDatabase, migrateToLatest, type Database } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import { createTestDatabase } from "@renderbus/testing";
import { migrations } from "../../migrations/index.js";
import { DISPATCHER_SCHEMA, type DispatcherTables } from "../database.js";
import { toDeliveryMessage } from "../rpc/delivery-message.js";
import { claimDueDeliveries, releaseLease } from "./delivery-queue.js";
import { dueFifoHeadOf } from "./endpoint-flow.js";
import { insertDeliveries, type NewDelivery } from "./insert-deliveries.js";
import type { DeliveryRow } from "./delivery.js";

let database: Database<DispatcherTables>;
let db: Kysely<DispatcherTables>;
const LEASE_MS = 10_000;

beforeAll(async () => {
  // Enough connections for concurrent claims to really run side by side.
  database = createDatabase<DispatcherTables>({ url: await createTestDatabase("dispatcherclaim"), schema: DISPATCHER_SCHEMA, maxConnections: 8 });
  db = database.db;
  await migrateToLatest(db, DISPATCHER_SCHEMA, migrations);
});
afterAll(async () => database?.close());
// Claims take whatever is due: each test starts from an empty queue.
beforeEach(async () => void (await sql`truncate deliveries cascade`.execute(db)));

/** `count` deliveries of `orgId`, due at `now` (created one millisecond apart, oldest first). */
async function due(orgId: string, count: number, now: number): Promise<string[]> {
  const ids: string[] = [];
  for (let i = 0; i < count; i += 1) {
    const [row] = await db.transaction().execute((trx) =>
      insertDeliveries(trx, [{ orgId, event: "job.running", sourceEventId: newId("evt"), jobId: newId("job"), batchId: null, url: "http://127.0.0.1:9/", body: "{}", eventAt: now }], { now: now + i - count }),
    );
    ids.push(row!.id);
  }
  return ids;
}

const claim = async (now: number, limit = 10, orgMaxInFlight = 8) => (await claimDueDeliveries(db, { limit, orgMaxInFlight, leaseMs: LEASE_MS, leaseToken: "replica-a", now })).rows;

describe("claiming due deliveries", () => {
  it("claims the oldest due first, and a claimed delivery again only once its lease has run out", async () => {
    const now = Date.now();
    const ids = await due(newId("org"), 3, now);
    expect((await claim(now, 2)).map((row) => row.id)).toEqual(ids.slice(0, 2));
    expect((await claim(now + 1)).map((row) => row.id)).toEqual(ids.slice(2));
    expect(await claim(now + LEASE_MS - 1)).toEqual([]);
    // The holder crashed: at the end of the lease every one of them is due again.
    expect((await claim(now + LEASE_MS + 1)).map((row) => row.id).sort()).toEqual([...ids].sort());
  });

  it("gives an org no more than its in-flight cap, counting the leases it holds already", async () => {
    const now = Date.now();
    const [busy, other] = [newId("org"), newId("org")];
    await due(busy, 5, now);
    const [otherId] = await due(other, 1, now);
    const first = await claim(now, 10, 2);
    expect(first.filter((row) => row.org_id === busy)).toHaveLength(2);
    expect(first.find((row) => row.org_id === other)?.id).toBe(otherId);
    expect(await claim(now + 1, 10, 2)).toEqual([]);
  });

  it("shows no next attempt while a delivery is being attempted, and a released one is due at once", async () => {
    const now = Date.now();
    await due(newId("org"), 1, now);
    const [claimed] = await claim(now);
    expect(claimed!.next_attempt_at).toBe(now + LEASE_MS);
    expect(toDeliveryMessage({ ...claimed!, lease_until: Date.now() + LEASE_MS }).nextAttemptAt).toBeUndefined();
    await releaseLease(db, claimed!.id, "replica-a", now + 5);
    expect((await claim(now + 5)).map((row) => row.id)).toEqual([claimed!.id]);
  });
});

/** One delivery of `orgId` due at each of `times`, in that order; their ids. */
async function dueAt(orgId: string, times: number[]): Promise<string[]> {
  const ids: string[] = [];
  for (const time of times) {
    const [row] = await insertDeliveries(db, [fresh(orgId)], { now: time });
    ids.push(row!.id);
  }
  return ids;
}

/**
 * `count` pending deliveries of `orgId` due at `now`, as insertDeliveries stores them, in one plain statement: a
 * fixture. (insertDeliveries counts the org's leases once per row it inserts; with the plan PostgreSQL picks on these
 * small test tables each count reads the org's rows, and 20,000 rows took 25 s.) To a FIFO endpoint (`sequenced`) they
 * are numbered from 1 as the insert numbers them. The table is analyzed once the rows are committed, as autovacuum
 * would soon after such a burst: an ANALYZE that autovacuum started while this insert was uncommitted records the new
 * pages with no rows in them, and on a table it believes empty PostgreSQL reads the queue whole (a sequential scan,
 * 20,045 rows read where a claim reads 45; reproduced by analyzing mid-insert). Without this, the bounds below would
 * fail on autovacuum's timing instead of on the claim.
 */
async function backlog(orgId: string, count: number, now: number, { endpointId = "ep_default", sequenced = false } = {}): Promise<void> {
  const ids = Array.from({ length: count }, () => newId("del"));
  await sql`
    insert into deliveries (id, org_id, event, source_event_id, job_id, batch_id, url, body, status, next_attempt_at, event_at, created_at, trace_headers, announced, endpoint_id, sequence)
    select id, ${orgId}, 'job.running', 'evt_' || id, null, null, 'http://127.0.0.1:9/', '{}', 'pending', ${now}::bigint, ${now}::bigint, ${now}::bigint, '{}', false,
           ${endpointId}, case when ${sequenced}::boolean then n end
    from unnest(${ids}::text[]) with ordinality as v(id, n)`.execute(db);
  await sql`analyze deliveries`.execute(db);
}

/**
 * Index entries and table rows of `deliveries` read so far in this transaction, from PostgreSQL's per-transaction
 * counters (they are not flushed before the transaction ends, so a difference within one is exact).
 */
async function rowsRead(trx: Kysely<DispatcherTables>): Promise<number> {
  const { rows } = await sql<{ read: string }>`
    select pg_stat_get_xact_tuples_returned('deliveries'::regclass) + pg_stat_get_xact_tuples_fetched('deliveries'::regclass)
           + (select coalesce(sum(pg_stat_get_xact_tuples_returned(indexrelid)), 0) from pg_index where indrelid = 'deliveries'::regclass) as read`.execute(trx);
  return Number(rows[0]!.read);
}

/** claimDueDeliveries inside a transaction, with the rows of `deliveries` it read. */
async function measuredClaim(now: number, limit: number, orgMaxInFlight: number): Promise<{ claimed: DeliveryRow[]; walked: boolean; read: number }> {
  return db.transaction().execute(async (trx) => {
    const before = await rowsRead(trx);
    const { rows: claimed, walked } = await claimDueDeliveries(trx, { limit, orgMaxInFlight, leaseMs: LEASE_MS, leaseToken: "replica-a", now });
    return { claimed, walked, read: (await rowsRead(trx)) - before };
  });
}

describe("claiming while an org at its in-flight cap heads the queue", () => {
  it("claims another org's delivery without reading the capped org's backlog", async () => {
    const now = Date.now();
    const [capped, other] = [newId("org"), newId("org")];
    await backlog(capped, 20_000, now - 1000);
    expect(await claim(now - 1000, 8, 8)).toHaveLength(8);
    const [otherId] = await dueAt(other, [now]);
    const { claimed, walked, read } = await measuredClaim(now + 1, 10, 8);
    expect(claimed.map((row) => row.id)).toEqual([otherId]);
    // It found the row by walking: it says so, and its sender claims again at once.
    expect(walked).toBe(true);
    // Skipping the backlog row by row read 340,000 here (each row, and the org's leases again for each); a claim reads
    // what `limit` bounds, whatever the backlog.
    expect(read).toBeLessThan(1000);
  });

  it("gives the other orgs' deliveries oldest first, each org within its cap", async () => {
    const now = Date.now();
    const [capped, early, middle, late] = [newId("org"), newId("org"), newId("org"), newId("org")];
    await backlog(capped, 50, now - 1000);
    expect(await claim(now - 1000, 2, 2)).toHaveLength(2);
    const earlyIds = await dueAt(early, [now + 1, now + 2, now + 3]);
    // `early` holds one lease already: one slot is left of its two.
    expect((await claim(now + 1, 1, 2)).map((row) => row.id)).toEqual(earlyIds.slice(0, 1));
    const [middleId] = await dueAt(middle, [now + 5]);
    const lateIds = await dueAt(late, [now + 10, now + 11, now + 12]);
    const claimed = await claim(now + 20, 3, 2);
    // Which rows, not in what order: UPDATE ... RETURNING promises none.
    expect(claimed.map((row) => row.id).sort()).toEqual([earlyIds[1]!, middleId!, lateIds[0]!].sort());
    expect((await claim(now + 21, 10, 2)).map((row) => row.id)).toEqual([lateIds[1]]);
  });

  it("visits a bounded number of orgs, however many wait for a retry", async () => {
    const now = Date.now();
    // 3,000 orgs with a retry due in a minute: each would be a step of the walk, which stops long before.
    await insertDeliveries(db, Array.from({ length: 3000 }, () => fresh(newId("org"))), { now: now + 60_000 });
    const capped = newId("org");
    await backlog(capped, 20_000, now - 1000);
    expect(await claim(now - 1000, 8, 8)).toHaveLength(8);
    const { claimed, read } = await measuredClaim(now + 1, 10, 8);
    expect(claimed).toEqual([]);
    expect(read).toBeLessThan(1000);
  });
});

/** A gated endpoint of `orgId` (rate-limited, FIFO or both); its id. */
async function gatedEndpoint(orgId: string, settings: { ordering: "none" | "fifo"; rate: number | null }): Promise<string> {
  const id = newId("ep");
  await sql`insert into endpoints (org_id, id, url, events, ordering, rate_limit_per_second, created_at, updated_at)
            values (${orgId}, ${id}, 'http://127.0.0.1:9/', ${["*"]}::text[], ${settings.ordering}, ${settings.rate}, 0, 0)`.execute(db);
  return id;
}

describe("claiming while a gated endpoint's backlog heads the queue", () => {
  // Only claimGatedDeliveries takes a gated endpoint's deliveries, at the endpoint's pace: its backlog stays due.
  const gatedKinds = [
    { kind: "rate-limited", settings: { ordering: "none", rate: 1 } },
    { kind: "FIFO", settings: { ordering: "fifo", rate: null } },
  ] as const;
  for (const { kind, settings } of gatedKinds) {
    it(`claims another org's delivery without reading a ${kind} endpoint's backlog, and nothing of that backlog`, async () => {
      const now = Date.now();
      const [gated, other] = [newId("org"), newId("org")];
      const endpointId = await gatedEndpoint(gated, settings);
      await backlog(gated, 20_000, now - 1000, { endpointId, sequenced: settings.ordering === "fifo" });
      const [otherId] = await dueAt(other, [now]);
      const { claimed, read } = await measuredClaim(now + 1, 10, 8);
      expect(claimed.map((row) => row.id)).toEqual([otherId]);
      // Skipping the backlog row by row read 20,002 here (each row, and its endpoint looked up for each); a claim reads
      // what `limit` bounds, whatever the backlog.
      expect(read).toBeLessThan(1000);
    });
  }

  it("claims the org's deliveries to its other endpoints behind it, oldest first, within the org's cap", async () => {
    const now = Date.now();
    const [gated, other] = [newId("org"), newId("org")];
    const endpointId = await gatedEndpoint(gated, { ordering: "none", rate: 1 });
    await backlog(gated, 200, now - 1000, { endpointId });
    const ownIds = await dueAt(gated, [now + 1, now + 3, now + 4]);
    const [otherId] = await dueAt(other, [now + 2]);
    const claimed = await claim(now + 10, 10, 2);
    expect(claimed.map((row) => row.id).sort()).toEqual([ownIds[0], otherId, ownIds[1]].sort());
    expect(await claim(now + 11, 10, 2)).toEqual([]);
  });

  it("gives concurrent claims disjoint rows, none of the gated endpoint", async () => {
    const now = Date.now();
    const gated = newId("org");
    const endpointId = await gatedEndpoint(gated, { ordering: "none", rate: 1 });
    await backlog(gated, 2000, now - 1000, { endpointId });
    const orgs = Array.from({ length: 30 }, () => newId("org"));
    const ids = (await Promise.all(orgs.map((orgId, i) => dueAt(orgId, [now + i, now + i + 1])))).flat();
    // Each claim's head is gated rows only: each takes its rows from the walk.
    const claims = await Promise.all(Array.from({ length: 6 }, (_, i) => claimDueDeliveries(db, { limit: 4, orgMaxInFlight: 8, leaseMs: LEASE_MS, leaseToken: `replica-${i}`, now: now + 100 }).then((claim) => claim.rows)));
    const claimed = claims.flat().map((row) => row.id);
    expect(new Set(claimed).size).toBe(claimed.length);
    expect(claimed.every((id) => ids.includes(id))).toBe(true);
    // Whatever they left, the next claim takes, and nothing of the gated endpoint.
    const rest = (await claim(now + 101, 100)).map((row) => row.id);
    expect([...claimed, ...rest].sort()).toEqual([...ids].sort());
  });
});

describe("a FIFO endpoint's head, however long its queue", () => {
  it("is found by reading its first entries, not the whole queue, and not while one of the endpoint's deliveries is leased", async () => {
    const now = Date.now();
    const orgId = newId("org");
    const endpointId = await gatedEndpoint(orgId, { ordering: "fifo", rate: null });
    await backlog(orgId, 20_000, now - 1000, { endpointId, sequenced: true });
    const head = () =>
      db.transaction().execute(async (trx) => {
        const before = await rowsRead(trx);
        const { rows } = await sql<{ id: string }>`
          select h.id from (values (${orgId}::text, ${endpointId}::text)) s(org_id, endpoint_id)
          cross join lateral (${dueFifoHeadOf(sql.ref("s.org_id"), sql.ref("s.endpoint_id"), now)}) h`.execute(trx);
        return { ids: rows.map((row) => row.id), read: (await rowsRead(trx)) - before };
      });
    const { rows: first } = await sql<{ id: string }>`select id from deliveries where endpoint_id = ${endpointId} and sequence = 1`.execute(db);
    const found = await head();
    expect(found.ids).toEqual([first[0]!.id]);
    // The order the index did not have read and sorted all 20,000 (and the lease check read them again).
    expect(found.read).toBeLessThan(100);

    // A delivery behind the head held by a replica (the head failed meanwhile, then this was sent): the queue waits.
    await sql`update deliveries set lease_until = ${now + 60_000}, lease_token = 'replica-a', next_attempt_at = ${now + 60_000}
              where endpoint_id = ${endpointId} and sequence = 2`.execute(db);
    const held = await head();
    expect(held.ids).toEqual([]);
    expect(held.read).toBeLessThan(100);
  });
});

/** A delivery owed by a fresh job event of `orgId`. */
const fresh = (orgId: string, sourceEventId = newId("evt")): NewDelivery => ({
  orgId,
  event: "job.running",
  sourceEventId,
  jobId: newId("job"),
  batchId: null,
  url: "http://127.0.0.1:9/",
  body: "{}",
  eventAt: Date.now(),
});

describe("leasing fresh deliveries as they are inserted", () => {
  /** The source events that got a delivery, and the deliveries leased to the inserting replica. */
  const outcome = (rows: DeliveryRow[]) => ({ created: new Set(rows.map((row) => row.source_event_id)), leased: rows.filter((row) => row.lease_token !== null) });
  const insert = async (deliveries: NewDelivery[], now: number, limit: number, orgMaxInFlight = 8) =>
    outcome(await insertDeliveries(db, deliveries, { now, lease: { token: "replica-b", until: now + LEASE_MS, limit, orgMaxInFlight } }));

  it("leases as many as the inserting replica has free slots; the rest wait for any replica's claim", async () => {
    const now = Date.now();
    const orgId = newId("org");
    const deliveries = [fresh(orgId), fresh(orgId), fresh(orgId)];
    const { created, leased } = await insert(deliveries, now, 2);
    expect(created).toEqual(new Set(deliveries.map((d) => d.sourceEventId)));
    expect(leased.map((row) => row.source_event_id)).toEqual([deliveries[0]!.sourceEventId, deliveries[1]!.sourceEventId]);
    expect(leased.every((row) => row.lease_token === "replica-b" && row.lease_until === now + LEASE_MS && row.next_attempt_at === now + LEASE_MS)).toBe(true);
    // Only the unleased one is claimable; when the leases run out (their holders died) all three are due again.
    const [claimed] = await claim(now);
    expect(claimed?.source_event_id).toBe(deliveries[2]!.sourceEventId);
    expect((await claim(now + LEASE_MS + 1)).map((row) => row.id).sort()).toEqual([...leased.map((row) => row.id), claimed!.id].sort());
  });

  it("keeps each org within its in-flight cap, counting the leases it holds already", async () => {
    const now = Date.now();
    const [busy, other] = [newId("org"), newId("org")];
    await due(busy, 1, now);
    expect(await claim(now, 10, 2)).toHaveLength(1);
    const deliveries = [fresh(busy), fresh(busy), fresh(busy), fresh(other)];
    const { leased } = await insert(deliveries, now + 1, 10, 2);
    expect(leased.map((row) => row.source_event_id)).toEqual([deliveries[0]!.sourceEventId, deliveries[3]!.sourceEventId]);
    // The two over the cap wait as due deliveries, claimed once the org's slots free up.
    expect(await claim(now + 2, 10, 2)).toEqual([]);
  });

  it("creates and leases nothing for a redelivered event", async () => {
    const now = Date.now();
    const delivery = fresh(newId("org"));
    expect((await insert([delivery], now, 4)).leased).toHaveLength(1);
    expect(await insert([delivery], now + 1, 4)).toEqual({ created: new Set(), leased: [] });
  });

  it("leases nothing without a lease, every delivery due at once", async () => {
    const now = Date.now();
    const deliveries = [fresh(newId("org")), fresh(newId("org"))];
    const { created, leased } = outcome(await insertDeliveries(db, deliveries, { now }));
    expect([created.size, leased.length]).toEqual([2, 0]);
    expect(await claim(now)).toHaveLength(2);
  });
});

describe("the rows insertDeliveries returns", () => {
  it("are the rows stored, column for column, leased or not, with and without optional fields", async () => {
    const now = Date.now();
    const orgId = newId("org");
    const deliveries: NewDelivery[] = [
      fresh(orgId),
      { ...fresh(orgId), endpointId: "ep_custom", traceHeaders: { traceparent: "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01" } },
      { ...fresh(orgId), skipped: true },
      { ...fresh(orgId), batchId: newId("batch"), jobId: null },
    ];
    const returned = await insertDeliveries(db, deliveries, { now, lease: { token: "replica-c", until: now + LEASE_MS, limit: 1, orgMaxInFlight: 8 } });
    expect(returned).toHaveLength(4);
    expect(returned.filter((row) => row.lease_token !== null)).toHaveLength(1);
    const stored = await db.selectFrom("deliveries").selectAll().where("org_id", "=", orgId).execute();
    const byId = new Map(stored.map((row) => [row.id, row]));
    for (const row of returned) expect(row).toEqual(byId.get(row.id));
    expect(returned.map((row) => row.source_event_id)).toEqual(deliveries.map((d) => d.sourceEventId));
  });
});
