import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql, type Kysely } from "kysely";
import { createDatabase, migrateToLatest, type Database } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import { createLogger } from "@renderbus/telemetry";
import { createTestDatabase, recordStatements } from "@renderbus/testing";
import { migrations } from "../../migrations/index.js";
import { DISPATCHER_SCHEMA, type DispatcherTables } from "../database.js";
import { insertDeliveries } from "../deliveries/insert-deliveries.js";
import { createDispatcherMetrics } from "../metrics.js";
import { startDeliverySender } from "./delivery-sender.js";
import { createWebhookAgent } from "./post-webhook.js";

const POLL_MS = 40;
const CLAIM = /for update of d skip locked/;

let url: string;
let database: Database<DispatcherTables>;
let db: Kysely<DispatcherTables>;
/** Every statement the pool's connections sent, in order. */
let statements: string[] = [];

beforeAll(async () => {
  url = await createTestDatabase("dispatcheridlepoll");
  database = createDatabase<DispatcherTables>({ url, schema: DISPATCHER_SCHEMA, maxConnections: 2 });
  db = database.db;
  await migrateToLatest(db, DISPATCHER_SCHEMA, migrations);
  statements = recordStatements(database.pool).statements;
});
afterAll(async () => database?.close());

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("the delivery sender's safety-net poll", () => {
  it("costs an idle replica one statement a poll and no claim, and still claims a row made due without a NOTIFY", async () => {
    const agent = createWebhookAgent({ guardAddresses: false, connectTimeoutMs: 1000 });
    const sender = await startDeliverySender({
      db,
      databaseUrl: url,
      // The auth service is "unreachable": a claimed delivery is postponed, never sent.
      endpoints: { get: async () => Promise.reject(new Error("auth service unreachable")), forget: () => undefined, forgetAll: () => undefined },
      agent,
      metrics: createDispatcherMetrics(async () => 0),
      logger: createLogger({ service: "idle-poll-test", level: "silent" }),
      concurrency: 4,
      orgMaxInFlight: 4,
      timeoutMs: 1000,
      retryScheduleMs: [1000],
      brand: "Renderbus",
      pollIntervalMs: POLL_MS,
      leaseMs: 5000,
    });
    try {
      await sleep(POLL_MS * 3);
      statements.length = 0;
      await sleep(POLL_MS * 12);
      const idle = [...statements];
      expect(idle.length).toBeGreaterThanOrEqual(5);
      expect(idle.filter((text) => CLAIM.test(text))).toEqual([]);
      expect(new Set(idle.map((text) => text.replace(/\s+/g, " ").trim())).size).toBe(1);

      // Made due by hand: an unqueued delivery is never due and notifies nobody; an update sends no NOTIFY either.
      const [row] = await insertDeliveries(
        db,
        [{ orgId: newId("org"), event: "job.running", sourceEventId: newId("evt"), jobId: newId("job"), batchId: null, url: "http://127.0.0.1:9/", body: "{}", eventAt: Date.now() }],
        { queued: false },
      );
      statements.length = 0;
      await sql`update deliveries set next_attempt_at = ${Date.now()} where id = ${row!.id}`.execute(db);
      await expect.poll(() => statements.some((text) => CLAIM.test(text)), { timeout: 5000, interval: POLL_MS }).toBe(true);
      await expect.poll(async () => (await db.selectFrom("deliveries").select("lease_token").where("id", "=", row!.id).executeTakeFirstOrThrow()).lease_token, { timeout: 5000 }).toBe(sender.lease.token);
    } finally {
      await sender.stop();
      await agent.close();
    }
  });
});
