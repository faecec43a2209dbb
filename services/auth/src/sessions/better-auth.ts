import { randomUUID } from "node:crypto";
import pg from "pg";
import { betterAuth, type BetterAuthOptions } from "better-auth";
import { getMigrations } from "better-auth/db/migration";
import { newId } from "@renderbus/ids";
import type { Logger } from "@renderbus/telemetry";
import { betterAuthSecretOf, type AuthConfig } from "../config.js";
import type { AuthStore } from "../store.js";
import { createOrg } from "../orgs/orgs.service.js";
import { registerLoopbackClientsAsNative, renderbusOAuthProvider } from "../oauth/oauth-provider.js";

/** The dashboard session cookie (SPEC: exactly this name). */
export const SESSION_COOKIE = "rb_session";
/** Session lifetime (seed section 8): 30 days. */
export const SESSION_SECONDS = 30 * 24 * 60 * 60;
/** Better Auth's routes are served under this path, by the auth service and through the gateway alike. */
export const AUTH_BASE_PATH = "/auth";

/**
 * Better Auth options for Renderbus: email + password, `rb_session`, users with `usr_` ids, a personal org per
 * sign-up, and the OAuth 2.1 provider for MCP agents.
 */
export function betterAuthOptions(config: AuthConfig, store: AuthStore, logger?: Logger) {
  const secure = new URL(config.PUBLIC_URL).protocol === "https:";
  return {
    appName: "Renderbus",
    baseURL: config.PUBLIC_URL,
    basePath: AUTH_BASE_PATH,
    secret: betterAuthSecretOf(config),
    database: store.pool,
    trustedOrigins: [new URL(config.PUBLIC_URL).origin],
    emailAndPassword: { enabled: true, autoSignIn: true, minPasswordLength: 8, maxPasswordLength: 128 },
    session: { expiresIn: SESSION_SECONDS, updateAge: 24 * 60 * 60 },
    advanced: {
      // Secure cookies would rename the cookie to `__Secure-rb_session`; the name is part of the contract, so the
      // Secure attribute is set explicitly instead, from the public URL's scheme.
      useSecureCookies: false,
      // Better Auth skips its Origin check when it detects a test runner; the check is our CSRF defence for
      // cookie-authenticated POSTs, so it stays on everywhere.
      disableOriginCheck: false,
      disableCSRFCheck: false,
      cookies: { session_token: { name: SESSION_COOKIE, attributes: { httpOnly: true, sameSite: "lax", secure, path: "/" } } },
      database: { generateId: ({ model }) => (model === "user" ? newId("usr") : randomUUID()) },
    },
    databaseHooks: {
      user: {
        create: {
          // Every sign-up gets a personal org on the free plan, with the plan's monthly credits.
          after: async (user) => {
            const org = await createOrg(store, { name: personalOrgName(user.name, user.email), plan: "free", ownerUserId: user.id });
            logger?.info({ userId: user.id, orgId: org.id }, "personal organization created");
          },
        },
      },
    },
    logger: { disabled: config.MODE === "test" },
    plugins: [renderbusOAuthProvider(config, store)],
    hooks: { before: registerLoopbackClientsAsNative },
  } satisfies BetterAuthOptions;
}

function personalOrgName(name: string | undefined, email: string): string {
  const owner = name?.trim() || email.split("@")[0] || "My";
  return `${owner.slice(0, 80)}'s organization`;
}

/** A Better Auth instance over the `auth` schema. */
export function createBetterAuth(config: AuthConfig, store: AuthStore, logger?: Logger) {
  return betterAuth(betterAuthOptions(config, store, logger));
}

export type RenderbusAuth = ReturnType<typeof createBetterAuth>;

/**
 * Creates or updates Better Auth's tables (user, session, account, verification) in the `auth` schema. Replicas
 * starting together take turns under an advisory lock.
 */
export async function migrateBetterAuth(options: BetterAuthOptions, pool: pg.Pool): Promise<void> {
  const lock = await pool.connect();
  try {
    await lock.query("select pg_advisory_lock(hashtext('migrate:auth:better-auth'))");
    const { runMigrations } = await getMigrations(options);
    await runMigrations();
  } finally {
    await lock.query("select pg_advisory_unlock(hashtext('migrate:auth:better-auth'))").catch(() => undefined);
    lock.release();
  }
}
