import { sql, type Kysely } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "@renderbus/config";
import { createDatabase, migrateToLatest, type Database } from "@renderbus/db";
import { loadPlans } from "@renderbus/plans";
import { createTestDatabase, testInfra } from "@renderbus/testing";
import { migrations } from "../../migrations/index.js";
import { authConfigSchema, secretsKeyOf, type AuthConfig } from "../config.js";
import { createSecretBox } from "@renderbus/secret-box";
import { AUTH_SCHEMA, type AuthTables } from "../database.js";
import { betterAuthOptions, migrateBetterAuth } from "../sessions/better-auth.js";
import { ALERT_EMAIL_RETENTION_MS, authRetentionSteps } from "./prune.js";

const DAY = 24 * 60 * 60 * 1000;
const NOW = Date.now();

let config: AuthConfig;
let database: Database<AuthTables>;
const anyDb = () => database.db as unknown as Kysely<any>;

beforeAll(async () => {
  config = parseConfig(authConfigSchema, { MODE: "test", EMAIL_VERIFICATION: "off", DATABASE_URL: await createTestDatabase("authretention"), NATS_URL: testInfra().natsUrl });
  database = createDatabase<AuthTables>({ url: config.DATABASE_URL, schema: AUTH_SCHEMA });
  const store = { db: database.db, pool: database.pool, plans: loadPlans(config.PLANS_JSON), secretBox: createSecretBox(secretsKeyOf(config)), mode: config.MODE, emailVerification: config.EMAIL_VERIFICATION, close: () => database.close() };
  await migrateBetterAuth(betterAuthOptions(config, store), store.pool);
  // Up to the migration before retention, so the test can leave a marker carried over from the ledger (settled_at 0).
  await migrateToLatest(database.db, AUTH_SCHEMA, Object.fromEntries(Object.entries(migrations).filter(([name]) => name < "2026-11-24-004")));
  await sql`insert into organization (id, name, slug, "createdAt") values ('org_ret', 'Retention Inc', 'retention-inc', ${new Date()})`.execute(anyDb());
  await sql`insert into orgs (id, plan, created_at, updated_at, credits_renew_at) values ('org_ret', 'pro', 1, 1, 1)`.execute(anyDb());
  await database.db
    .insertInto("credit_ledger")
    .values({ id: "led_legacy", org_id: "org_ret", kind: "capture", credits: 1, job_id: "job_legacy", entry_key: "capture:job_legacy", balance_after: 0, description: "x", created_at: NOW - 2 * DAY })
    .execute();
  await database.db.insertInto("settled_jobs").values({ org_id: "org_ret", job_id: "job_legacy", settled_at: 0 }).execute();
  await migrateToLatest(database.db, AUTH_SCHEMA, migrations);
});
afterAll(async () => database?.close());

const stepNamed = (name: string) => authRetentionSteps(database.db, { settledJobRetentionMs: config.SETTLED_JOB_RETENTION_DAYS * DAY }).find((step) => step.name === name)!;
const sweep = (now = NOW) => stepNamed("settled_jobs").prune(now, () => false);
const settledJobs = async () => (await database.db.selectFrom("settled_jobs").select("job_id").orderBy("job_id").execute()).map((row) => row.job_id);

describe("auth retention sweep (SECURITY-AUDIT finding 21)", () => {
  it("stamps markers carried over from the ledger with their job's last entry, so they are not taken for ancient ones", async () => {
    const row = await database.db.selectFrom("settled_jobs").select("settled_at").where("job_id", "=", "job_legacy").executeTakeFirstOrThrow();
    expect(row.settled_at).toBe(NOW - 2 * DAY);
  });

  it("deletes settled-job markers past SETTLED_JOB_RETENTION_DAYS (30) and keeps younger ones; the ledger stays whole", async () => {
    expect(config.SETTLED_JOB_RETENTION_DAYS).toBe(30);
    await database.db
      .insertInto("settled_jobs")
      .values([
        { org_id: "org_ret", job_id: "job_old", settled_at: NOW - 30 * DAY - 1 },
        { org_id: "org_ret", job_id: "job_young", settled_at: NOW - 29 * DAY },
      ])
      .execute();
    const ledgerBefore = await database.db.selectFrom("credit_ledger").select("id").execute();

    expect(await sweep()).toBe(1);
    expect(await settledJobs()).toEqual(["job_legacy", "job_young"]);
    expect(await database.db.selectFrom("credit_ledger").select("id").execute()).toEqual(ledgerBefore);
  });

  // Both records of alert emails (who was mailed, which disables were admitted: alerts/alert-limit.ts) stop a redelivered
  // announcement from mailing again; they outlast any redelivery of it (7 days in the stream).
  const alertRecords = [
    { table: "alert_emails", row: (eventId: string, at: number) => ({ event_id: eventId, user_id: "usr_1", sent_at: at }) },
    { table: "alert_events", row: (eventId: string, at: number) => ({ event_id: eventId, org_id: "org_1", admitted_at: at }) },
  ] as const;
  it.each(alertRecords)("deletes $table after 30 days, past any redelivery of the announcement", async ({ table, row }) => {
    expect(ALERT_EMAIL_RETENTION_MS).toBe(30 * DAY);
    await anyDb()
      .insertInto(table)
      .values([row("evt_old", NOW - 30 * DAY - 1), row("evt_young", NOW - 29 * DAY)])
      .execute();
    expect(await stepNamed(table).prune(NOW, () => false)).toBe(1);
    expect((await anyDb().selectFrom(table).select("event_id").execute()).map((kept) => kept.event_id)).toEqual(["evt_young"]);
  });

  it("refuses a retention shorter than JetStream could deliver a job event again (8 days at least)", () => {
    expect(() => parseConfig(authConfigSchema, { MODE: "test", EMAIL_VERIFICATION: "off", SETTLED_JOB_RETENTION_DAYS: "7" })).toThrow();
  });
});
