import { notFound } from "@renderbus/errors";
import { planOf } from "@renderbus/plans";
import type { auth } from "@renderbus/contracts";
import type { AuthContext } from "@renderbus/rpc";
import type { AuthResources } from "../auth-resources.js";
import { enqueueOrgUpdated } from "../events/auth-events.js";
import { requireManager } from "./membership.js";
import { orgView } from "./org-view.js";
import { checkWebhookChange } from "./webhook-rules.js";

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
  if (!org.webhook_secret_encrypted) return { orgId, plan: org.plan, url: org.webhook_url };
  try {
    return { orgId, plan: org.plan, url: org.webhook_url, secret: store.secretBox.open(org.webhook_secret_encrypted, orgId) };
  } catch {
    // An operator's key change, not a passing fault: thrown, it failed every lookup and the dispatcher asked again
    // every 2 s for ever. Said instead, so the org's deliveries fail unsent and the dispatcher logs why
    // (docs/operations.md); never the secret.
    return { orgId, plan: org.plan, url: org.webhook_url, secretUnreadable: true };
  }
}
