import { randomUUID } from "node:crypto";
import pg from "pg";
import { betterAuth, type BetterAuthOptions } from "better-auth";
import { getMigrations } from "better-auth/db/migration";
import { organization } from "better-auth/plugins";
import { newId } from "@renderbus/ids";
import type { Logger } from "@renderbus/telemetry";
import { betterAuthSecretOf, type AuthConfig } from "../config.js";
import type { AuthResources } from "../auth-resources.js";
import { AUTH_SCHEMA } from "../database.js";
import { OrgCreation } from "../orgs/create-org.js";
import { betterAuthLog } from "./better-auth-log.js";
import { membershipOf } from "../orgs/membership.js";
import { registerLoopbackClientsAsNative, renderbusOAuthProvider } from "../oauth/oauth-provider.js";
import { memberKeyHooks, revokeKeysOfLeavingMember } from "../api-keys/member-key-hooks.js";
import { releaseHeldCredits } from "../billing/held-credits.js";
import { smtpMailer, type Mailer } from "../email/mailer.js";
import { sendVerificationEmailWith, VERIFICATION_LINK_SECONDS } from "../email/verification-email.js";
import { PASSWORD_RESET_LINK_SECONDS, sendPasswordResetWith } from "../email/password-reset-email.js";
import { sendInvitationEmailWith } from "../email/invitation-email.js";

/** The dashboard session cookie (docs/concepts.md: exactly this name, part of the contract). */
export const SESSION_COOKIE = "rb_session";
/** Session lifetime: 30 days. */
export const SESSION_SECONDS = 30 * 24 * 60 * 60;
/** Better Auth's routes are served under this path, by the auth service and through the gateway alike. */
export const AUTH_BASE_PATH = "/auth";

/**
 * Better Auth's own limits per client IP and path (`window` in seconds), replacing its defaults of 3 sign-ins or
 * sign-ups per 10 s, which a dashboard user retrying a typo could meet before the gateway's friendlier limit.
 */
export const BETTER_AUTH_RATE_LIMITS = {
  "/sign-in/*": { window: 60, max: 60 },
  "/sign-up/*": { window: 60, max: 60 },
  "/oauth2/register": { window: 60, max: 30 },
  "/request-password-reset": { window: 60, max: 10 },
  "/forget-password/*": { window: 60, max: 10 },
  "/change-password": { window: 60, max: 10 },
  "/send-verification-email": { window: 60, max: 10 },
  "/organization/invite-member": { window: 60, max: 30 },
};

/** How many organizations one user may belong to (each user-created org starts on `free` with its credits). */
export const ORGANIZATIONS_PER_USER = 10;

/**
 * Better Auth options for Renderbus: email + password, `rb_session`, users with `usr_` ids, organizations with `org_`
 * ids (the organization plugin: members, roles, invitations), a personal org per sign-up, and the OAuth 2.1 provider
 * for MCP agents. `orgs` creates orgs through the instance's own API once `createBetterAuth` has given it (the sign-up
 * hook uses it) and holds the plugin hook that creates our side of each org.
 */
export function betterAuthOptions(config: AuthConfig, store: AuthResources, logger?: Logger, orgs: OrgCreation = new OrgCreation(store)) {
  const secure = new URL(config.PUBLIC_URL).protocol === "https:";
  const mailer: Mailer | undefined = config.SMTP_URL ? smtpMailer(config) : undefined;
  return {
    appName: "Renderbus",
    baseURL: config.PUBLIC_URL,
    basePath: AUTH_BASE_PATH,
    secret: betterAuthSecretOf(config),
    database: store.pool,
    trustedOrigins: [new URL(config.PUBLIC_URL).origin],
    emailAndPassword: {
      enabled: true,
      autoSignIn: true,
      minPasswordLength: 8,
      maxPasswordLength: 128,
      // Forgotten passwords: a link by email wherever there is a mail server (docs/operations.md, "Email"); a reset
      // signs the account out everywhere. Without SMTP_URL, /auth/request-password-reset answers RESET_PASSWORD_DISABLED.
      ...(mailer
        ? { sendResetPassword: sendPasswordResetWith(mailer, logger), resetPasswordTokenExpiresIn: PASSWORD_RESET_LINK_SECONDS, revokeSessionsOnPasswordReset: true }
        : {}),
    },
    // EMAIL_VERIFICATION=required: a sign-up is sent a link; signing in does not wait for it, the free plan's credits
    // do (billing/held-credits.ts). The dashboard asks for another link through /auth/send-verification-email.
    ...(config.EMAIL_VERIFICATION === "required" && mailer
      ? {
          emailVerification: {
            sendOnSignUp: true,
            autoSignInAfterVerification: true,
            expiresIn: VERIFICATION_LINK_SECONDS,
            sendVerificationEmail: sendVerificationEmailWith(mailer, logger),
            afterEmailVerification: async (user: { id: string }) => {
              const released = await releaseHeldCredits(store.db, store.plans, user.id);
              logger?.info({ userId: user.id, released }, "email address confirmed");
            },
          },
        }
      : {}),
    session: { expiresIn: SESSION_SECONDS, updateAge: 24 * 60 * 60 },
    rateLimit: {
      // Better Auth turns its limiter on only when NODE_ENV=production, which no deployment sets: on, everywhere.
      // Counts live in the database, so every auth replica shares them. Keyed by client IP only, this is the
      // backstop behind the gateway's limits (services/gateway/src/auth/auth-abuse-limits.ts: per account and per
      // IP, with the documented 429 body), so it is set looser than those and a client behind the gateway meets them first.
      enabled: true,
      storage: "database",
      customRules: BETTER_AUTH_RATE_LIMITS,
    },
    advanced: {
      // The client IP is the one the gateway states: it overwrites X-Forwarded-For with `request.ip` (the socket peer
      // unless a proxy in TRUSTED_PROXIES forwarded it). A list of several addresses is not believed.
      ipAddress: { ipAddressHeaders: ["x-forwarded-for"] },
      // Secure cookies would rename the cookie to `__Secure-rb_session`; the name is part of the contract, so the
      // Secure attribute is set explicitly instead, from the public URL's scheme.
      useSecureCookies: false,
      // Better Auth skips its Origin check when it detects a test runner; the check is our CSRF defence for
      // cookie-authenticated POSTs, so it stays on everywhere.
      disableOriginCheck: false,
      disableCSRFCheck: false,
      cookies: { session_token: { name: SESSION_COOKIE, attributes: { httpOnly: true, sameSite: "lax", secure, path: "/" } } },
      database: { generateId: ({ model }) => (model === "user" ? newId("usr") : model === "organization" ? newId("org") : randomUUID()) },
    },
    databaseHooks: {
      session: {
        create: {
          // A new session starts in the user's oldest org, so the organization plugin's routes (invite, list
          // members, ...) have an active organization without the dashboard calling set-active first.
          before: async (session) => {
            const membership = await membershipOf(store, session.userId);
            return { data: { ...session, activeOrganizationId: membership?.orgId ?? null } };
          },
        },
      },
      user: {
        create: {
          // Every sign-up gets a personal org on the free plan, with the plan's monthly credits (held until the
          // address is confirmed, where that is required).
          after: async (user) => {
            const orgId = await orgs.createOrg({ name: personalOrgName(user.name, user.email), plan: "free", ownerUserId: user.id, holdCreditsUntilConfirmed: true });
            // Better Auth runs this hook after sign-up's transaction, when the first session already exists.
            await store.db.updateTable("session").set({ activeOrganizationId: orgId }).where("userId", "=", user.id).where("activeOrganizationId", "is", null).execute();
            logger?.info({ userId: user.id, orgId }, "personal organization created");
          },
        },
      },
    },
    logger: { disabled: config.MODE === "test", log: betterAuthLog(logger) },
    plugins: [
      organization({
        // Owners and admins invite, change roles and remove members; members only see the list (the plugin's
        // default roles are exactly Renderbus's owner/admin/member).
        creatorRole: "owner",
        organizationLimit: ORGANIZATIONS_PER_USER,
        // Deleting an org would cascade to its keys, credits and ledger while its jobs live on in another service:
        // that is an operator's decision, not a dashboard button.
        disableOrganizationDeletion: true,
        // The dashboard shows the invitation link to share; with a mail server, an inviter whose address is confirmed
        // also has it emailed. The invitee accepts while signed in with the invited address. Where addresses are
        // confirmed, only a confirmed one may accept, so an address someone signed up with but does not own cannot
        // take an invitation meant for its owner. Invitation ids are random UUIDs (122 bits).
        requireEmailVerificationOnInvitation: config.EMAIL_VERIFICATION === "required",
        ...(mailer ? { sendInvitationEmail: sendInvitationEmailWith(mailer, config.PUBLIC_URL, logger) } : {}),
        invitationExpiresIn: 7 * 24 * 60 * 60,
        // A removed (or leaving) member's API keys stop working; a role change reaches cached keys at once.
        organizationHooks: { afterCreateOrganization: orgs.afterCreateOrganization, ...memberKeyHooks(store) },
      }),
      renderbusOAuthProvider(config, store),
    ],
    hooks: { before: registerLoopbackClientsAsNative, after: revokeKeysOfLeavingMember(store) },
  } satisfies BetterAuthOptions;
}

function personalOrgName(name: string | undefined, email: string): string {
  const owner = name?.trim() || email.split("@")[0] || "My";
  return `${owner.slice(0, 80)}'s organization`;
}

/**
 * A Better Auth instance over the `auth` schema, with `createOrg` (an org on a given plan, owned by a given user)
 * for operator actions.
 */
export function createBetterAuth(config: AuthConfig, store: AuthResources, logger?: Logger) {
  const orgs = new OrgCreation(store);
  const auth = betterAuth(betterAuthOptions(config, store, logger, orgs));
  orgs.useApi(auth.api);
  return Object.assign(auth, { createOrg: orgs.createOrg });
}

export type RenderbusAuth = ReturnType<typeof createBetterAuth>;

/**
 * Creates or updates Better Auth's tables (user, session, account, verification, organization, member, invitation,
 * OAuth) in the `auth` schema, creating the schema if needed. Replicas starting together take turns under an
 * advisory lock.
 */
export async function migrateBetterAuth(options: BetterAuthOptions, pool: pg.Pool): Promise<void> {
  const lock = await pool.connect();
  try {
    await lock.query("select pg_advisory_lock(hashtext('migrate:auth:better-auth'))");
    await lock.query(`create schema if not exists ${AUTH_SCHEMA}`);
    const { runMigrations } = await getMigrations(options);
    await runMigrations();
  } finally {
    await lock.query("select pg_advisory_unlock(hashtext('migrate:auth:better-auth'))").catch(() => undefined);
    lock.release();
  }
}
