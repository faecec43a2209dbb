import { notFound } from "@renderbus/errors";
import type { auth } from "@renderbus/contracts";
import type { AuthResources } from "../auth-resources.js";
import { balanceOf } from "../billing/credit-ledger.js";

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
