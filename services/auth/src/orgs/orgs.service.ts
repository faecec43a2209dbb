import { forbidden, notFound } from "@renderbus/errors";
import { newId } from "@renderbus/ids";
import { planOf, type PlanName } from "@renderbus/plans";
import type { auth } from "@renderbus/contracts";
import type { AuthContext } from "@renderbus/rpc";
import type { AuthTables, Role } from "../database.js";
import type { AuthStore } from "../store.js";
import { balanceOf, grantCredits, openBalance } from "../billing/credit-ledger.js";
import { enqueueOrgUpdated } from "../events/auth-events.js";
import { checkWebhookChange } from "./webhook-rules.js";

type OrgRow = AuthTables["orgs"];

export interface CreateOrgInput {
  name: string;
  plan: PlanName;
  ownerUserId: string;
}

/** Creates an org with its owner, a balance row, and the plan's monthly credits granted (one `grant` entry). */
export async function createOrg(store: AuthStore, { name, plan, ownerUserId }: CreateOrgInput): Promise<OrgRow> {
  const now = Date.now();
  const org: OrgRow = { id: newId("org"), name, plan, webhook_url: null, webhook_secret_encrypted: null, created_at: now, updated_at: now };
  await store.db.transaction().execute(async (trx) => {
    await trx.insertInto("orgs").values(org).execute();
    await trx.insertInto("members").values({ org_id: org.id, user_id: ownerUserId, role: "owner", created_at: now }).execute();
    await openBalance(trx, org.id);
    const credits = store.plans[plan].monthlyCredits;
    if (credits > 0) await grantCredits(trx, org.id, credits, `monthly credits of plan ${plan}`);
  });
  return org;
}

/** Changes an org's plan and announces it (`auth.events.org.updated`) so gateways drop cached contexts. */
export async function setOrgPlan(store: AuthStore, orgId: string, plan: PlanName): Promise<OrgRow> {
  return store.db.transaction().execute(async (trx) => {
    const org = await trx.updateTable("orgs").set({ plan, updated_at: Date.now() }).where("id", "=", orgId).returningAll().executeTakeFirst();
    if (!org) throw notFound("Organization");
    await enqueueOrgUpdated(trx, { orgId, plan, occurredAt: Date.now() });
    return org;
  });
}

/** The org as the API shows it: the webhook secret only as `webhookSecretSet`. */
export async function orgView(store: AuthStore, orgId: string): Promise<auth.Org> {
  const org = await store.db.selectFrom("orgs").selectAll().where("id", "=", orgId).executeTakeFirst();
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
export async function roleOf(store: AuthStore, context: AuthContext): Promise<Role | undefined> {
  if (context.role === "owner" || context.role === "admin" || context.role === "member") return context.role;
  const member = await store.db
    .selectFrom("members")
    .select("role")
    .where("org_id", "=", context.orgId)
    .where("user_id", "=", context.userId)
    .executeTakeFirst();
  return member?.role;
}

/** @throws AppError FORBIDDEN unless the caller is an owner or admin of its org (keys and webhooks). */
export async function requireManager(store: AuthStore, context: AuthContext): Promise<void> {
  const role = await roleOf(store, context);
  if (role !== "owner" && role !== "admin") throw forbidden("Only owners and admins of the organization may do this");
}

/**
 * Sets or clears an org's webhook target. Another org's id is NOT_FOUND (never revealing it exists); only owners
 * and admins may; the plan must include webhooks. The secret is stored sealed and never returned.
 */
export async function updateOrgWebhook(store: AuthStore, context: AuthContext, request: auth.UpdateOrgWebhookRequest): Promise<auth.Org> {
  if (request.orgId !== context.orgId) throw notFound("Organization");
  await requireManager(store, context);
  const org = await store.db.selectFrom("orgs").select(["plan"]).where("id", "=", context.orgId).executeTakeFirst();
  if (!org) throw notFound("Organization");
  const problem = checkWebhookChange({ plan: planOf(org.plan, store.plans), mode: store.mode, webhookUrl: request.webhookUrl, webhookSecret: request.webhookSecret });
  if (problem) throw problem;
  await setWebhookTarget(store, context.orgId, request.webhookUrl, request.webhookSecret);
  return orgView(store, context.orgId);
}

/**
 * Writes the webhook target without the caller checks (the operator CLI uses it directly). An empty URL clears both
 * URL and secret; undefined leaves a field unchanged.
 */
export async function setWebhookTarget(store: AuthStore, orgId: string, webhookUrl: string | undefined, webhookSecret: string | undefined): Promise<void> {
  const clear = webhookUrl === "";
  await store.db.transaction().execute(async (trx) => {
    const org = await trx
      .updateTable("orgs")
      .set({
        updated_at: Date.now(),
        ...(clear ? { webhook_url: null, webhook_secret_encrypted: null } : {}),
        ...(!clear && webhookUrl !== undefined ? { webhook_url: webhookUrl } : {}),
        ...(!clear && webhookSecret !== undefined ? { webhook_secret_encrypted: store.secretBox.seal(webhookSecret) } : {}),
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
export async function webhookTarget(store: AuthStore, orgId: string): Promise<auth.WebhookTarget> {
  const org = await store.db.selectFrom("orgs").select(["plan", "webhook_url", "webhook_secret_encrypted"]).where("id", "=", orgId).executeTakeFirst();
  if (!org) throw notFound("Organization");
  if (!planOf(org.plan, store.plans).webhooks || !org.webhook_url) return { orgId, plan: org.plan };
  return {
    orgId,
    plan: org.plan,
    url: org.webhook_url,
    secret: org.webhook_secret_encrypted ? store.secretBox.open(org.webhook_secret_encrypted) : undefined,
  };
}

/** The org a user acts in by default: the oldest membership (the personal org made at sign-up). */
export async function defaultMembershipOf(store: AuthStore, userId: string): Promise<{ orgId: string; role: Role; plan: PlanName } | undefined> {
  const row = await store.db
    .selectFrom("members")
    .innerJoin("orgs", "orgs.id", "members.org_id")
    .select(["members.org_id as orgId", "members.role as role", "orgs.plan as plan"])
    .where("members.user_id", "=", userId)
    .orderBy("members.created_at", "asc")
    .orderBy("members.org_id", "asc")
    .limit(1)
    .executeTakeFirst();
  return row;
}
