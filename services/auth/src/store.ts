import type { Kysely } from "kysely";
import type pg from "pg";
import { createDatabase, migrateToLatest } from "@renderbus/db";
import { loadPlans, type Plan, type PlanName } from "@renderbus/plans";
import { migrations } from "../migrations/index.js";
import { secretsKeyOf, type AuthConfig } from "./config.js";
import { createSecretBox, type SecretBox } from "./crypto/secret-box.js";
import { AUTH_SCHEMA, type AuthTables } from "./database.js";
import { betterAuthOptions, migrateBetterAuth } from "./sessions/better-auth.js";

/** What every auth feature needs: the `auth` schema, the plan table, the secrets box and the mode. */
export interface AuthStore {
  db: Kysely<AuthTables>;
  /** Pool whose search_path is the `auth` schema; Better Auth and the outbox relay use it too. */
  pool: pg.Pool;
  plans: Record<PlanName, Plan>;
  secretBox: SecretBox;
  mode: AuthConfig["MODE"];
  close(): Promise<void>;
}

/**
 * Connects to the database and migrates the `auth` schema: Better Auth's tables first (its organization plugin's
 * tables are referenced by ours), then our own migrations.
 */
export async function openAuthStore(config: AuthConfig, applicationName = "auth"): Promise<AuthStore> {
  const database = createDatabase<AuthTables>({ url: config.DATABASE_URL, schema: AUTH_SCHEMA, applicationName });
  const store: AuthStore = {
    db: database.db,
    pool: database.pool,
    plans: loadPlans(config.PLANS_JSON),
    secretBox: createSecretBox(secretsKeyOf(config)),
    mode: config.MODE,
    close: () => database.close(),
  };
  try {
    await migrateBetterAuth(betterAuthOptions(config, store), store.pool);
    await migrateToLatest(database.db, AUTH_SCHEMA, migrations);
  } catch (error) {
    await database.close();
    throw error;
  }
  return store;
}
