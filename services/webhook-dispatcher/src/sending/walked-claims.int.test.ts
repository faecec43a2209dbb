import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql, type Kysely } from "kysely";
import { createDatabase, migrateToLatest, type Database } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import { createLogger } from "@renderbus/telemetry";
import { createTestDatabase } from "@renderbus/testing";
import { migrations } from "../../migrations/index.js";
import { DISPATCHER_SCHEMA, type DispatcherTables } from "../database.js";
import { createDispatcherMetrics } from "../metrics.js";
import { startDeliverySender } from "./delivery-sender.js";
import { createWebhookAgent } from "./post-webhook.js";

let url: string;
let database: Database<DispatcherTables>;
let db: Kysely<DispatcherTables>;

beforeAll(async () => {
  url = await createTestDatabase("dispatcherwalked");
  database = createDatabase<DispatcherTables>({ url, schema: DISPATCHER_SCHEMA, maxConnections: 4 });
  db = database.db;
  await migrateToLatest(db, DISPATCHER_SCHEMA, migrations);
});
afterAll(async () => database?.close());

/** Deliveries of `orgId`, one per id, due (or leased by `leaseToken` until) at `at`. */
async function store(orgId: string, count: number, at: number, leaseToken: string | null = null): Promise<string[]> {
  const ids = Array.from({ length: count }, () => newId("del"));
  await sql`
    insert into deliveries (id, org_id, event, source_event_id, job_id, batch_id, url, body, status, next_attempt_at, lease_until, lease_token, event_at, created_at, trace_headers, announced, endpoint_id)
    select id, ${orgId}, 'job.running', 'evt_' || id, null, null, 'http://127.0.0.1:9/', '{}', 'pending', ${at}::bigint,
           case when ${leaseToken}::text is null then null else ${at}::bigint end, ${leaseToken}::text, ${at}::bigint, ${at}::bigint, '{}', false, 'ep_default'
    from unnest(${ids}::text[]) as v(id)`.execute(db);
  await sql`analyze deliveries`.execute(db);
  return ids;
}

describe("the delivery sender behind an org at its in-flight cap", () => {
  it("claims again at once after a claim that walked, so the other orgs' due deliveries do not wait for a slot to free or its next poll", async () => {
    const now = Date.now();
    // An org at its cap (8 leases another replica holds) whose backlog heads the queue, then 20 orgs with one due
    // delivery each. A claim of 10 walks past the backlog and, each org budgeted its 8 free slots, takes 5 of them
    // (claim-properties.int.test.ts: "walk slot budget").
    const capped = newId("org");
    await store(capped, 8, now + 60_000, "replica-b");
    await store(capped, 100, now - 10_000);
    const others = (await Promise.all(Array.from({ length: 20 }, (_, i) => store(newId("org"), 1, now - 5_000 + i)))).flat();

    const agent = createWebhookAgent({ guardAddresses: false, connectTimeoutMs: 1000 });
    // The auth service answers nothing until the test ends: each claimed delivery holds its slot meanwhile, so no slot
    // comes free to wake the claim loop, and only claiming again at once fills the rest.
    let answerAuth!: (error: Error) => void;
    const authAnswers = new Promise<never>((_, reject) => (answerAuth = reject));
    const sender = await startDeliverySender({
      db,
      databaseUrl: url,
      endpoints: { get: () => authAnswers, forget: () => undefined, forgetAll: () => undefined },
      agent,
      metrics: createDispatcherMetrics(async () => 0),
      logger: createLogger({ service: "walked-claims-test", level: "silent" }),
      concurrency: 10,
      orgMaxInFlight: 8,
      timeoutMs: 1000,
      retryScheduleMs: [1000],
      brand: "Renderbus",
      // No poll within the test.
      pollIntervalMs: 600_000,
      leaseMs: 60_000,
    });
    try {
      const held = async () =>
        (await db.selectFrom("deliveries").select("id").where("id", "in", others).where("lease_token", "=", sender.lease.token).execute()).length;
      // Every slot filled: two claims of 5 (without claiming again, 5 and the rest waiting for a wake-up).
      await expect.poll(held, { timeout: 10_000, interval: 50 }).toBe(10);
      // The capped org got nothing more.
      const cappedHeld = await db.selectFrom("deliveries").select("id").where("org_id", "=", capped).where("lease_token", "=", sender.lease.token).execute();
      expect(cappedHeld).toEqual([]);
    } finally {
      answerAuth(new Error("auth service unreachable"));
      await sender.stop();
      await agent.close();
    }
  });
});
