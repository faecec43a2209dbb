import { notFound } from "@renderbus/errors";
import type { PlanName } from "@renderbus/plans";
import type { AuthResources } from "../auth-resources.js";
import { topUpForMonth } from "../billing/monthly-credits.js";
import type { AuthTables } from "../database.js";
import { enqueueOrgUpdated } from "../events/auth-events.js";

type OrgRow = AuthTables["orgs"];

/**
 * Changes an org's plan (releasing credits held for an unconfirmed address), tops its credits up to the new plan's
 * monthly credits for the current credit month (an upgrade does not wait for the next month; a downgrade takes
 * nothing away), and announces the change (`auth.events.org.updated`) so gateways drop cached contexts.
 */
export async function setOrgPlan(store: AuthResources, orgId: string, plan: PlanName): Promise<OrgRow> {
  return store.db.transaction().execute(async (trx) => {
    const now = Date.now();
    // An operator's plan change is theirs to make: credits held for an unconfirmed address are released with it.
    const org = await trx.updateTable("orgs").set({ plan, credits_held_for: null, updated_at: now }).where("id", "=", orgId).returningAll().executeTakeFirst();
    if (!org) throw notFound("Organization");
    await topUpForMonth(trx, store.plans, org, now);
    await enqueueOrgUpdated(trx, { orgId, plan, occurredAt: now });
    return org;
  });
}
