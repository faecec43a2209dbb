import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { forbidden, notFound } from "@renderbus/errors";
import { planOf, type PlanName } from "@renderbus/plans";
import type { auth } from "@renderbus/contracts";
import { isManagerRole, type AuthContext } from "@renderbus/rpc";
import type { AuthTables, Role } from "../database.js";
import type { AuthResources } from "../auth-resources.js";
import { balanceOf, openBalance } from "../billing/credit-ledger.js";
import { nextCreditRenewal, topUpForMonth } from "../billing/monthly-credits.js";
import { enqueueOrgUpdated } from "../events/auth-events.js";
import { checkWebhookChange } from "./webhook-rules.js";

type OrgRow = AuthTables["orgs"];

/** The part of Better Auth's API that creates organizations (the organization plugin's `createOrganization`). */
export interface OrganizationApi {
  createOrganization(input: { body: { name: string; slug: string; userId: string } }): Promise<{ id: string } | null>;
}

export interface CreateOrgInput {
  name: string;
  plan: PlanName;
  ownerUserId: string;
}

/**
 * The plan an org being created right now is on. Better Auth's `afterCreateOrganization` hook creates our side of the
 * org and has no way to receive it as an argument; orgs created by users through `/auth/organization/create` have
 * none set and start on `free`.
 */
const planOfOrgBeingCreated = new AsyncLocalStorage<PlanName>();

/**
 * Creates an org through Better Auth's organization plugin (the organization, and its owner as first member), then
 * our side of it on `plan` with the plan's monthly credits (see `ensureOrgSettings`, run by the plugin's hook).
 */
export async function createOrg(organizations: OrganizationApi, { name, plan, ownerUserId }: CreateOrgInput): Promise<string> {
  const created = await planOfOrgBeingCreated.run(plan, () =>
    organizations.createOrganization({ body: { name, slug: uniqueSlugOf(name), userId: ownerUserId } }),
  );
  // A failing hook fails the call above; the organization it leaves without our row is healed by `membershipOf`.
  if (!created) throw new Error("Better Auth did not create the organization");
  return created.id;
}

/** What `afterCreateOrganization` does: our side of a new org, on the plan of `createOrg` or `free`. */
export const afterOrganizationCreated = (store: AuthResources) => async ({ organization }: { organization: { id: string } }) => {
  await ensureOrgSettings(store, organization.id, planOfOrgBeingCreated.getStore() ?? "free");
};

/**
 * Creates our side of an org (plan, balance, the plan's monthly credits as one `grant` entry) in one transaction,
 * once: a second call for the same org changes nothing. Organization and settings are written by two systems, so a
 * crash between them is healed by calling this again (membership resolution does, see `membershipOf`).
 */
export async function ensureOrgSettings(store: AuthResources, orgId: string, plan: PlanName): Promise<void> {
  const now = Date.now();
  await store.db.transaction().execute(async (trx) => {
    const inserted = await trx
      .insertInto("orgs")
      .values({ id: orgId, plan, webhook_url: null, webhook_secret_encrypted: null, credits_renew_at: nextCreditRenewal(now, now), created_at: now, updated_at: now })
      .onConflict((conflict) => conflict.column("id").doNothing())
      .returning("id")
      .executeTakeFirst();
    if (!inserted) return;
    await openBalance(trx, orgId);
    await topUpForMonth(trx, store.plans, { id: orgId, plan, created_at: now }, now);
  });
}

/** A URL-safe slug from a name, made unique with a random suffix (Better Auth requires a unique slug). */
export function uniqueSlugOf(name: string): string {
  const base = name
    .normalize("NFKD")
    .toLowerCase()
    .replace(/[^a-z0-9]+/g, "-")
    .replace(/^-+|-+$/g, "")
    .slice(0, 40);
  return `${base || "org"}-${randomBytes(5).toString("hex")}`;
}

/**
 * Changes an org's plan, tops its credits up to the new plan's monthly credits for the current credit month (an
 * upgrade does not wait for the next month; a downgrade takes nothing away), and announces the change
 * (`auth.events.org.updated`) so gateways drop cached contexts.
 */
export async function setOrgPlan(store: AuthResources, orgId: string, plan: PlanName): Promise<OrgRow> {
  return store.db.transaction().execute(async (trx) => {
    const now = Date.now();
    const org = await trx.updateTable("orgs").set({ plan, updated_at: now }).where("id", "=", orgId).returningAll().executeTakeFirst();
    if (!org) throw notFound("Organization");
    await topUpForMonth(trx, store.plans, org, now);
    await enqueueOrgUpdated(trx, { orgId, plan, occurredAt: now });
    return org;
  });
}

/** The org as the API shows it: the webhook secret only as `webhookSecretSet`. */
export async function orgView(store: AuthResources, orgId: string): Promise<auth.Org> {
  const org = await store.db
    .selectFrom("orgs")
    .innerJoin("organization", "organization.id", "orgs.id")
    .select(["orgs.id", "organization.name", "orgs.plan", "orgs.webhook_url", "orgs.webhook_secret_encrypted", "orgs.created_at"])
    .where("orgs.id", "=", orgId)
    .executeTakeFirst();
  if (!org) throw notFound("Organization");
  const balance = await balanceOf(store.db, orgId);
  return {
    id: org.id,
    name: org.name,
    plan: org.plan,
    credits: balance.available,
    webhookUrl: org.webhook_url ?? undefined,
    webhookSecretSet: org.webhook_secret_encrypted !== null,
    createdAt: org.created_at,
  };
}

/** The caller's role in its org: from the auth context when the gateway sent it, else from membership. */
export async function roleOf(store: AuthResources, context: AuthContext): Promise<Role | undefined> {
  if (context.role === "owner" || context.role === "admin" || context.role === "member") return context.role;
  const member = await store.db
    .selectFrom("member")
    .select("role")
    .where("organizationId", "=", context.orgId)
    .where("userId", "=", context.userId)
    .executeTakeFirst();
  return member ? effectiveRole(member.role) : undefined;
}

/** Better Auth allows several roles per member ("admin,member"); the strongest one is what the member may do. */
export function effectiveRole(roles: string): Role {
  const names = roles.split(",").map((role) => role.trim());
  if (names.includes("owner")) return "owner";
  if (names.includes("admin")) return "admin";
  return "member";
}

/** @throws AppError FORBIDDEN unless the caller is an owner or admin of its org (keys and webhooks). */
export async function requireManager(store: AuthResources, context: AuthContext): Promise<void> {
  if (!isManagerRole(await roleOf(store, context))) throw forbidden("Only owners and admins of the organization may do this");
}

/**
 * Sets or clears an org's webhook target. Another org's id is NOT_FOUND (never revealing it exists); only owners
 * and admins may; the plan must include webhooks. The secret is stored sealed and never returned.
 */
export async function updateOrgWebhook(store: AuthResources, context: AuthContext, request: auth.UpdateOrgWebhookRequest): Promise<auth.Org> {
  if (request.orgId !== context.orgId) throw notFound("Organization");
  await requireManager(store, context);
  const org = await store.db.selectFrom("orgs").select(["plan", "webhook_secret_encrypted"]).where("id", "=", context.orgId).executeTakeFirst();
  if (!org) throw notFound("Organization");
  const problem = checkWebhookChange({
    plan: planOf(org.plan, store.plans),
    mode: store.mode,
    webhookUrl: request.webhookUrl,
    webhookSecret: request.webhookSecret,
    secretSet: org.webhook_secret_encrypted !== null,
  });
  if (problem) throw problem;
  await setWebhookTarget(store, context.orgId, request.webhookUrl, request.webhookSecret);
  return orgView(store, context.orgId);
}

/**
 * Writes the webhook target without the caller checks (the operator CLI uses it directly). An empty URL clears both
 * URL and secret; undefined leaves a field unchanged.
 */
export async function setWebhookTarget(store: AuthResources, orgId: string, webhookUrl: string | undefined, webhookSecret: string | undefined): Promise<void> {
  const clear = webhookUrl === "";
  await store.db.transaction().execute(async (trx) => {
    const org = await trx
      .updateTable("orgs")
      .set({
        updated_at: Date.now(),
        ...(clear ? { webhook_url: null, webhook_secret_encrypted: null } : {}),
        ...(!clear && webhookUrl !== undefined ? { webhook_url: webhookUrl } : {}),
        ...(!clear && webhookSecret !== undefined ? { webhook_secret_encrypted: store.secretBox.seal(webhookSecret, orgId) } : {}),
      })
      .where("id", "=", orgId)
      .returning(["plan"])
      .executeTakeFirst();
    if (!org) throw notFound("Organization");
    await enqueueOrgUpdated(trx, { orgId, plan: org.plan, occurredAt: Date.now() });
  });
}

/**
 * Internal: the org's webhook target with the secret decrypted, for the dispatcher to sign with. The URL and secret
 * are left out when the org's plan does not include webhooks (e.g. after a downgrade).
 */
export async function webhookTarget(store: AuthResources, orgId: string): Promise<auth.WebhookTarget> {
  const org = await store.db.selectFrom("orgs").select(["plan", "webhook_url", "webhook_secret_encrypted"]).where("id", "=", orgId).executeTakeFirst();
  if (!org) throw notFound("Organization");
  if (!planOf(org.plan, store.plans).webhooks || !org.webhook_url) return { orgId, plan: org.plan };
  return {
    orgId,
    plan: org.plan,
    url: org.webhook_url,
    secret: org.webhook_secret_encrypted ? store.secretBox.open(org.webhook_secret_encrypted, orgId) : undefined,
  };
}

export interface Membership {
  orgId: string;
  role: Role;
  plan: PlanName;
}

/**
 * The org a user acts in: `preferredOrgId` (the session's active organization) when the user is still a member of
 * it, else the oldest membership (the personal org made at sign-up). An org whose settings row is missing (a crash
 * between Better Auth's write and ours) gets it now, on the free plan.
 */
export async function membershipOf(store: AuthResources, userId: string, preferredOrgId?: string | null): Promise<Membership | undefined> {
  const row = await store.db
    .selectFrom("member")
    .leftJoin("orgs", "orgs.id", "member.organizationId")
    .select(["member.organizationId as orgId", "member.role as role", "orgs.plan as plan"])
    .where("member.userId", "=", userId)
    .orderBy(sql<boolean>`${sql.ref("member.organizationId")} = ${preferredOrgId ?? ""}`, "desc")
    .orderBy("member.createdAt", "asc")
    .orderBy("member.organizationId", "asc")
    .limit(1)
    .executeTakeFirst();
  if (!row) return undefined;
  if (row.plan === null) await ensureOrgSettings(store, row.orgId, "free");
  return { orgId: row.orgId, role: effectiveRole(row.role), plan: row.plan ?? "free" };
}

/** The membership of `userId` in exactly `orgId`, if any. */
export async function membershipIn(store: AuthResources, userId: string, orgId: string): Promise<Membership | undefined> {
  const membership = await membershipOf(store, userId, orgId);
  return membership?.orgId === orgId ? membership : undefined;
}
