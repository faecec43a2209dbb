import { sql } from "kysely";
import { notFound, validationError } from "@renderbus/errors";
import { newId } from "@renderbus/ids";
import { planOf, type PlanName } from "@renderbus/plans";
import type { AuthConfig } from "../config.js";
import type { AuthTables } from "../database.js";
import type { AuthResources } from "../auth-resources.js";
import { openAuthResources } from "../open-auth-resources.js";
import { createApiKey } from "../api-keys/api-keys.service.js";
import { grantCredits, type BalanceView } from "../billing/credit-ledger.js";
import { setWebhookTarget } from "../orgs/org-webhook.js";
import { setOrgPlan } from "../orgs/set-org-plan.js";
import { checkWebhookChange } from "../orgs/webhook-rules.js";
import { createBetterAuth, type RenderbusAuth } from "../sessions/better-auth.js";

/**
 * Operator actions behind `npm run admin`, also used by the start script and tests to seed orgs. They act on the
 * `auth` schema directly, as part of the auth service.
 */

/** The `auth` schema with every migration applied (own tables and Better Auth's), and Better Auth over it. */
export interface AdminStore extends AuthResources {
  betterAuth: RenderbusAuth;
}

/** Opens the `auth` schema with every migration applied, for operator actions. */
export async function openAdminStore(config: AuthConfig): Promise<AdminStore> {
  const store = await openAuthResources(config, "auth-admin");
  const betterAuth = createBetterAuth(config, store);
  // Plugins initialise in the background (the OAuth provider seeds its resources); a short-lived CLI must not close
  // the pool under them.
  await betterAuth.$context;
  return Object.assign(store, { betterAuth });
}

export interface CreatedOrg {
  orgId: string;
  userId: string;
  apiKeyId: string;
  /** The full API key: print it once, it is stored only as a hash. */
  apiKey: string;
}

/**
 * Creates an org on a plan with its monthly credits, a service user as its owner (a user without a password, who
 * cannot sign in), and a first API key.
 */
export async function createOrgWithKey(store: AdminStore, { name, plan, keyName = "default" }: { name: string; plan: PlanName; keyName?: string }): Promise<CreatedOrg> {
  if (name.trim().length < 1 || name.length > 200) throw validationError("name must be 1-200 characters");
  const userId = newId("usr");
  const now = new Date();
  await sql`
    insert into "user" (id, name, email, "emailVerified", "createdAt", "updatedAt")
    values (${userId}, ${`${name} (service)`}, ${`${userId.toLowerCase()}@service.renderbus.invalid`}, true, ${now}, ${now})`.execute(store.db);
  const orgId = await store.betterAuth.createOrg({ name: name.trim(), plan, ownerUserId: userId });
  const created = await createApiKey(store, orgId, userId, keyName);
  return { orgId, userId, apiKeyId: created.apiKey?.id ?? "", apiKey: created.key };
}

/** Changes an org's plan (announced on `auth.events.org.updated`). */
export async function setPlan(store: AuthResources, orgId: string, plan: PlanName): Promise<AuthTables["orgs"]> {
  return setOrgPlan(store, orgId, plan);
}

/** Grants credits to an org (a `grant` ledger entry). */
export async function grantOrgCredits(store: AuthResources, orgId: string, credits: number): Promise<BalanceView> {
  if (!Number.isInteger(credits) || credits <= 0) throw validationError("amount must be a positive integer");
  return store.db.transaction().execute((trx) => grantCredits(trx, orgId, credits, "granted by an operator"));
}

/** Creates a key for an org, on behalf of its oldest owner. */
export async function createKeyForOrg(store: AuthResources, orgId: string, name: string): Promise<{ apiKeyId: string; apiKey: string }> {
  const owner = await store.db
    .selectFrom("member")
    .select("userId")
    .where("organizationId", "=", orgId)
    .where("role", "like", "%owner%")
    .orderBy("createdAt", "asc")
    .executeTakeFirst();
  if (!owner) throw notFound("Organization");
  const created = await createApiKey(store, orgId, owner.userId, name);
  return { apiKeyId: created.apiKey?.id ?? "", apiKey: created.key };
}

/** Sets an org's webhook URL and secret, with the same rules as the API (plan, HTTPS in production). */
export async function setOrgWebhook(store: AuthResources, orgId: string, url: string, secret: string): Promise<void> {
  const org = await store.db.selectFrom("orgs").select("plan").where("id", "=", orgId).executeTakeFirst();
  if (!org) throw notFound("Organization");
  const problem = checkWebhookChange({ plan: planOf(org.plan, store.plans), mode: store.mode, webhookUrl: url, webhookSecret: secret });
  if (problem) throw problem;
  await setWebhookTarget(store, orgId, url, secret);
}
