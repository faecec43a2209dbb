import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { sql, type Kysely } from "kysely";
import { createDatabase, migrateToLatest, type Database } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import { createTestDatabase } from "@renderbus/testing";
import { migrations } from "../../migrations/index.js";
import { DISPATCHER_SCHEMA, type DispatcherTables } from "../database.js";
import { claimDueDeliveries, insertDeliveries, releaseLease, toDeliveryMessage } from "./delivery.repository.js";

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
      insertDeliveries(trx, [{ orgId, event: "job.running", sourceEventId: newId("evt"), jobId: newId("job"), batchId: null, url: "http://127.0.0.1:9/", body: "{}", eventAt: now }], now + i - count),
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
