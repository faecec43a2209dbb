import { AsyncLocalStorage } from "node:async_hooks";
import { randomBytes } from "node:crypto";
import type { PlanName } from "@renderbus/plans";
import type { AuthResources } from "../auth-resources.js";
import { openBalance } from "../billing/credit-ledger.js";
import { nextCreditRenewal, topUpForMonth } from "../billing/monthly-credits.js";

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
