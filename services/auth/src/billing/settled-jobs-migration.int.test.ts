import { sql, type Kysely } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "@renderbus/config";
import { createDatabase, migrateToLatest, type Database } from "@renderbus/db";
import { loadPlans } from "@renderbus/plans";
import { createTestDatabase, testInfra } from "@renderbus/testing";
import { migrations } from "../../migrations/index.js";
import { authConfigSchema, secretsKeyOf } from "../config.js";
import { createSecretBox } from "@renderbus/secret-box";
import { AUTH_SCHEMA, type AuthTables } from "../database.js";
import { betterAuthOptions, migrateBetterAuth } from "../sessions/better-auth.js";
import { addMonthsUtc } from "./monthly-credits.js";

/**
 * Upgrading a deployment whose ledger predates `settled_jobs` (2026-11-24-002) and monthly renewals (-003): jobs it
 * settled stay settled, and its orgs get a renewal date.
 */
describe("migrations 2026-11-24-002 and -003 over an existing ledger", () => {
  let database: Database<AuthTables>;
  beforeAll(async () => {
    const config = parseConfig(authConfigSchema, { MODE: "test", EMAIL_VERIFICATION: "off", DATABASE_URL: await createTestDatabase("settledmigration"), NATS_URL: testInfra().natsUrl });
    database = createDatabase<AuthTables>({ url: config.DATABASE_URL, schema: AUTH_SCHEMA });
    const store = { db: database.db, pool: database.pool, plans: loadPlans(config.PLANS_JSON), secretBox: createSecretBox(secretsKeyOf(config)), mode: config.MODE, emailVerification: config.EMAIL_VERIFICATION, close: () => database.close() };
    await migrateBetterAuth(betterAuthOptions(config, store), store.pool);
    const before = Object.fromEntries(Object.entries(migrations).filter(([name]) => name < "2026-11-24-002"));
    await migrateToLatest(database.db, AUTH_SCHEMA, before);
  });
  afterAll(() => database?.close());

  it("marks every job with a capture or a release as settled, and no other", async () => {
    const db = database.db as unknown as Kysely<any>;
    await sql`insert into organization (id, name, slug, "createdAt") values ('org_old', 'Old Inc', 'old-inc', ${new Date()})`.execute(db);
    await sql`insert into orgs (id, plan, created_at, updated_at) values ('org_old', 'pro', 1, 1)`.execute(db);
    const entry = (id: string, kind: string, jobId: string | null) => ({
      id,
      org_id: "org_old",
      kind,
      credits: 1,
      job_id: jobId,
      entry_key: `${kind}:${jobId ?? id}`,
      balance_after: 0,
      description: kind,
      created_at: 1,
    });
    await db
      .insertInto("credit_ledger")
      .values([
        entry("led_1", "grant", null),
        entry("led_2", "reserve", "job_captured"),
        entry("led_3", "capture", "job_captured"),
        entry("led_4", "reserve", "job_released"),
        entry("led_5", "release", "job_released"),
        entry("led_6", "reserve", "job_running"),
      ])
      .execute();
    await migrateToLatest(database.db, AUTH_SCHEMA, migrations);

    const settled = await sql<{ job_id: string }>`select job_id from settled_jobs where org_id = 'org_old' order by job_id`.execute(database.db);
    expect(settled.rows.map((row) => row.job_id)).toEqual(["job_captured", "job_released"]);
  });

  it("gives every existing org its next credit month (due at once for an org older than a month)", async () => {
    // org_old was created at 1 ms after the epoch (previous test), and migrated to the latest schema there.
    const org = await database.db.selectFrom("orgs").select("credits_renew_at").where("id", "=", "org_old").executeTakeFirstOrThrow();
    expect(org.credits_renew_at).toBe(addMonthsUtc(1, 1));
    expect(org.credits_renew_at).toBe(Date.UTC(1970, 1, 1) + 1);
  });
});
