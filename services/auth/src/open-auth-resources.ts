import { createDatabase, migrateToLatest } from "@renderbus/db";
import { loadPlans } from "@renderbus/plans";
import { migrations } from "../migrations/index.js";
import type { AuthResources } from "./auth-resources.js";
import { secretsKeyOf, type AuthConfig } from "./config.js";
import { createSecretBox } from "@renderbus/secret-box";
import { AUTH_SCHEMA, type AuthTables } from "./database.js";
import { betterAuthOptions, migrateBetterAuth } from "./sessions/better-auth.js";

/**
 * Connects to the database and migrates the `auth` schema: Better Auth's tables first (its organization plugin's
 * tables are referenced by ours), then our own migrations.
 */
export async function openAuthResources(config: AuthConfig, applicationName = "auth"): Promise<AuthResources> {
  const database = createDatabase<AuthTables>({ url: config.DATABASE_URL, schema: AUTH_SCHEMA, applicationName, idleInTransactionTimeoutMs: config.DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS });
  const store: AuthResources = {
    db: database.db,
    pool: database.pool,
    plans: loadPlans(config.PLANS_JSON),
    secretBox: createSecretBox(secretsKeyOf(config), { acceptV1: config.SECRETS_ACCEPT_V1 }),
    mode: config.MODE,
    emailVerification: config.EMAIL_VERIFICATION,
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
