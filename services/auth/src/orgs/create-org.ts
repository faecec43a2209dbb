import { randomBytes } from "node:crypto";
import type { PlanName } from "@renderbus/plans";
import type { AuthResources } from "../auth-resources.js";
import { openBalance } from "../billing/credit-ledger.js";
import { nextCreditRenewal, topUpForMonth } from "../billing/monthly-credits.js";
import { isEmailVerified } from "../billing/held-credits.js";

/** The part of Better Auth's API that creates organizations (the organization plugin's `createOrganization`). */
export interface OrganizationApi {
  createOrganization(input: { body: { name: string; slug: string; userId: string } }): Promise<{ id: string } | null>;
}

export interface CreateOrgInput {
  name: string;
  plan: PlanName;
  ownerUserId: string;
  /**
   * The owner made it themselves (the personal org at sign-up): its credits are held until their address is
   * confirmed, when the deployment requires that (billing/held-credits.ts). Orgs an operator creates are not held.
   */
  holdCreditsUntilConfirmed?: boolean;
}

/** Who an org is made for, and whether its credits wait for their address to be confirmed. */
interface OrgOrigin {
  plan: PlanName;
  ownerUserId: string;
  holdCreditsUntilConfirmed: boolean;
}

/**
 * Creates orgs through Better Auth's organization plugin (the organization, and its owner as first member) and our
 * side of each (see `ensureOrgSettings`) on its plan, with the plan's monthly credits.
 *
 * Our side is created by the plugin's `afterCreateOrganization` hook, which receives only the new organization and
 * its creator, so `createOrg` hands the plan over explicitly: for the length of its call it files the plan under the
 * random slug it chose, together with the owner it named, and the hook takes the plan whose slug and owner both match.
 * An org created any other way (a user through `/auth/organization/create`) matches nothing and starts on `free`,
 * its credits held until its creator's address is confirmed.
 * One instance belongs to one Better Auth instance: `useApi` gives it that instance's API once it exists.
 */
export class OrgCreation {
  private readonly plansBySlug = new Map<string, OrgOrigin>();
  private organizations: OrganizationApi | undefined;

  constructor(private readonly store: AuthResources) {}

  useApi(organizations: OrganizationApi): void {
    this.organizations = organizations;
  }

  /** Creates an org on `plan` owned by `ownerUserId`; returns its id. */
  readonly createOrg = async ({ name, plan, ownerUserId, holdCreditsUntilConfirmed = false }: CreateOrgInput): Promise<string> => {
    if (!this.organizations) throw new Error("the organization API is not wired");
    const slug = uniqueSlugOf(name);
    this.plansBySlug.set(slug, { plan, ownerUserId, holdCreditsUntilConfirmed });
    try {
      const created = await this.organizations.createOrganization({ body: { name, slug, userId: ownerUserId } });
      // A failing hook fails the call above; the organization it leaves without our row is healed by `membershipOf`.
      if (!created) throw new Error("Better Auth did not create the organization");
      return created.id;
    } finally {
      this.plansBySlug.delete(slug);
    }
  };

  /** The plugin's `afterCreateOrganization`: our side of a new org, on the plan `createOrg` filed for it or `free`. */
  readonly afterCreateOrganization = async ({ organization, user }: { organization: { id: string; slug: string }; user: { id: string } }): Promise<void> => {
    const origin = this.originOf(organization.slug, user.id);
    await ensureOrgSettings(this.store, organization.id, origin.plan, origin.holdCreditsUntilConfirmed ? user.id : undefined);
  };

  private originOf(slug: string, creatorUserId: string): OrgOrigin {
    const filed = this.plansBySlug.get(slug);
    return filed && filed.ownerUserId === creatorUserId ? filed : { plan: "free", ownerUserId: creatorUserId, holdCreditsUntilConfirmed: true };
  }
}

/**
 * Creates our side of an org (plan, balance, the plan's monthly credits as one `grant` entry) in one transaction,
 * once: a second call for the same org changes nothing. Organization and settings are written by two systems, so a
 * crash between them is healed by calling this again (membership resolution does, see `membershipOf`).
 * With `holdFor`, a deployment that requires confirmed addresses grants nothing while that user's is unconfirmed
 * and marks the org held for them instead (billing/held-credits.ts).
 */
export async function ensureOrgSettings(store: AuthResources, orgId: string, plan: PlanName, holdFor?: string): Promise<void> {
  const now = Date.now();
  const held = holdFor !== undefined && store.emailVerification === "required" && !(await isEmailVerified(store.db, holdFor)) ? holdFor : null;
  await store.db.transaction().execute(async (trx) => {
    const inserted = await trx
      .insertInto("orgs")
      .values({ id: orgId, plan, webhook_url: null, webhook_secret_encrypted: null, credits_renew_at: nextCreditRenewal(now, now), credits_held_for: held, created_at: now, updated_at: now })
      .onConflict((conflict) => conflict.column("id").doNothing())
      .returning("id")
      .executeTakeFirst();
    if (!inserted) return;
    await openBalance(trx, orgId);
    if (held) return;
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
