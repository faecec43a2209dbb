import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { sql, type Kysely } from "kysely";
import { createDatabase, migrateToLatest, type Database } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import { createTestDatabase } from "@renderbus/testing";
import { migrations } from "../../migrations/index.js";
import { DISPATCHER_SCHEMA, type DispatcherTables } from "../database.js";
import { toDeliveryMessage } from "../rpc/delivery-message.js";
import { claimDueDeliveries, releaseLease } from "./delivery-queue.js";
import { insertDeliveries, type NewDelivery } from "./insert-deliveries.js";
import type { DeliveryRow } from "./delivery.js";

let database: Database<DispatcherTables>;
let db: Kysely<DispatcherTables>;
const LEASE_MS = 10_000;

beforeAll(async () => {
  database = createDatabase<DispatcherTables>({ url: await createTestDatabase("dispatcherclaim"), schema: DISPATCHER_SCHEMA, maxConnections: 2 });
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

const claim = (now: number, limit = 10, orgMaxInFlight = 8) => claimDueDeliveries(db, { limit, orgMaxInFlight, leaseMs: LEASE_MS, leaseToken: "replica-a", now });

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
