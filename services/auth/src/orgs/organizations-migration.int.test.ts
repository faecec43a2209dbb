import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "kysely";
import { parseConfig } from "@renderbus/config";
import { createDatabase, migrateToLatest, type Database } from "@renderbus/db";
import { loadPlans } from "@renderbus/plans";
import { createTestDatabase, testInfra } from "@renderbus/testing";
import { migrations } from "../../migrations/index.js";
import { authConfigSchema, secretsKeyOf } from "../config.js";
import { createSecretBox } from "@renderbus/secret-box";
import { AUTH_SCHEMA, type AuthTables } from "../database.js";
import { betterAuthOptions, migrateBetterAuth } from "../sessions/better-auth.js";
import type { AuthResources } from "../auth-resources.js";
import { membershipOf } from "./membership.js";
import { orgView } from "./org-view.js";

/**
 * Upgrading a deployment made before organizations moved to Better Auth's plugin: its orgs and members become
 * Better Auth organizations and members, and everything hanging off an org (plan, credits) keeps working.
 */
describe("migration 2026-11-24-001: organizations on Better Auth", () => {
  let database: Database<AuthTables>;
  let store: AuthResources;
  beforeAll(async () => {
    const config = parseConfig(authConfigSchema, { MODE: "test", EMAIL_VERIFICATION: "off", DATABASE_URL: await createTestDatabase("orgmigration"), NATS_URL: testInfra().natsUrl });
    database = createDatabase<AuthTables>({ url: config.DATABASE_URL, schema: AUTH_SCHEMA });
    store = {
      db: database.db,
      pool: database.pool,
      plans: loadPlans(config.PLANS_JSON),
      secretBox: createSecretBox(secretsKeyOf(config)),
      mode: config.MODE,
      emailVerification: config.EMAIL_VERIFICATION,
      close: () => database.close(),
    };
    // The order the service starts in: Better Auth's tables, then ours; here ours stop at the first migration.
    await migrateBetterAuth(betterAuthOptions(config, store), store.pool);
    await migrateToLatest(database.db, AUTH_SCHEMA, { "2026-11-23-001-init": migrations["2026-11-23-001-init"]! });
  });
  afterAll(() => database?.close());

  it("moves orgs and members into organization and member, keeping plans, credits and roles", async () => {
    const db = database.db as unknown as import("kysely").Kysely<any>;
    const now = new Date();
    for (const id of ["usr_owner", "usr_member"]) {
      await sql`insert into "user" (id, name, email, "emailVerified", "createdAt", "updatedAt") values (${id}, ${id}, ${`${id}@example.com`}, true, ${now}, ${now})`.execute(db);
    }
    await sql`insert into orgs (id, name, plan, created_at, updated_at) values ('org_legacy', 'Legacy Inc', 'pro', 1700000000000, 1700000000000)`.execute(db);
    await sql`insert into members (org_id, user_id, role, created_at) values ('org_legacy', 'usr_owner', 'owner', 1700000000000), ('org_legacy', 'usr_member', 'member', 1700000000001)`.execute(db);
    await sql`insert into credit_balances (org_id, available, reserved, updated_at) values ('org_legacy', 1234, 0, 1700000000000)`.execute(db);

    await migrateToLatest(database.db, AUTH_SCHEMA, migrations);

    const organization = await sql<{ name: string; slug: string; createdAt: Date }>`select name, slug, "createdAt" from organization where id = 'org_legacy'`.execute(db);
    expect(organization.rows).toEqual([{ name: "Legacy Inc", slug: "org_legacy", createdAt: new Date(1700000000000) }]);
    expect(await membershipOf(store, "usr_owner")).toEqual({ orgId: "org_legacy", role: "owner", plan: "pro" });
    expect(await membershipOf(store, "usr_member")).toEqual({ orgId: "org_legacy", role: "member", plan: "pro" });
    expect(await orgView(store, "org_legacy")).toMatchObject({ id: "org_legacy", name: "Legacy Inc", plan: "pro", credits: 1234 });
    const tables = await sql<{ name: string }>`select table_name as name from information_schema.tables where table_schema = 'auth' and table_name = 'members'`.execute(db);
    expect(tables.rows).toEqual([]);
  });
});
