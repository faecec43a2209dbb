import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "@renderbus/ids";
import { startAuthHarness, type AuthHarness } from "../testing/auth-harness.js";
import { grantOrgCredits, setPlan } from "../admin/index.js";
import { settleJob } from "./credit-ledger.js";
import { addMonthsUtc, renewDueCredits } from "./monthly-credits.js";

describe("monthly credits", () => {
  let harness: AuthHarness;
  beforeAll(async () => {
    harness = await startAuthHarness("monthlycredits");
  });
  afterAll(async () => harness?.stop());

  const orgRow = (orgId: string) => harness.store.db.selectFrom("orgs").selectAll().where("id", "=", orgId).executeTakeFirstOrThrow();
  const available = async (orgId: string) =>
    (await harness.store.db.selectFrom("credit_balances").select("available").where("org_id", "=", orgId).executeTakeFirstOrThrow()).available;
  const grants = (orgId: string) =>
    harness.store.db.selectFrom("credit_ledger").select(["credits", "balance_after", "description"]).where("org_id", "=", orgId).where("kind", "=", "grant").orderBy("id").execute();
  /** Spends `credits` on a completed job. */
  const spend = async (orgId: string, credits: number) => {
    const jobId = newId("job");
    await harness.billingClient.reserveCredits({ orgId, jobId, credits });
    await settleJob(harness.store.db, orgId, jobId, { outcome: "completed", credits });
  };

  it("tops an org up to its plan's monthly credits when its credit month turns, once", async () => {
    const { orgId } = await harness.seedOrg("starter");
    await spend(orgId, 1500);
    const { created_at: createdAt, credits_renew_at: renewAt } = await orgRow(orgId);
    expect(renewAt).toBe(addMonthsUtc(createdAt, 1));

    await renewDueCredits(harness.store.db, harness.store.plans, renewAt - 1);
    expect(await available(orgId)).toBe(400);

    await renewDueCredits(harness.store.db, harness.store.plans, renewAt);
    expect(await available(orgId)).toBe(1900);
    expect(await grants(orgId)).toEqual([
      { credits: 1900, balance_after: 1900, description: "monthly credits of plan starter" },
      { credits: 1500, balance_after: 1900, description: "monthly credits of plan starter" },
    ]);
    expect((await orgRow(orgId)).credits_renew_at).toBe(addMonthsUtc(createdAt, 2));

    // The same month again, from this replica or another one at the same moment: nothing more.
    await spend(orgId, 100);
    await Promise.all([renewDueCredits(harness.store.db, harness.store.plans, renewAt + 1), renewDueCredits(harness.store.db, harness.store.plans, renewAt + 1)]);
    expect(await available(orgId)).toBe(1800);
    expect(await grants(orgId)).toHaveLength(2);
  });

  it("grants nothing to an org at or above its monthly credits, and never takes operator grants away", async () => {
    const { orgId } = await harness.seedOrg("free");
    await grantOrgCredits(harness.store, orgId, 500);
    const { credits_renew_at: renewAt, created_at: createdAt } = await orgRow(orgId);
    await renewDueCredits(harness.store.db, harness.store.plans, renewAt);
    expect(await available(orgId)).toBe(700);
    expect(await grants(orgId)).toHaveLength(2);
    expect((await orgRow(orgId)).credits_renew_at).toBe(addMonthsUtc(createdAt, 2));
  });

  it("renews a month that was missed once, not once per missed month", async () => {
    const { orgId } = await harness.seedOrg("free");
    await spend(orgId, 200);
    const { created_at: createdAt } = await orgRow(orgId);
    // Renewals were down for three months.
    await renewDueCredits(harness.store.db, harness.store.plans, addMonthsUtc(createdAt, 3) + 5);
    expect(await available(orgId)).toBe(200);
    expect((await orgRow(orgId)).credits_renew_at).toBe(addMonthsUtc(createdAt, 4));
  });

  it("tops up to the new plan's credits at once on an upgrade, and takes nothing back on a downgrade", async () => {
    const { orgId } = await harness.seedOrg("free");
    await spend(orgId, 150);
    await setPlan(harness.store, orgId, "pro");
    expect(await available(orgId)).toBe(4900);
    await setPlan(harness.store, orgId, "free");
    expect(await available(orgId)).toBe(4900);
    // Back to pro within the same month: that month's pro top-up was given already.
    await spend(orgId, 1000);
    await setPlan(harness.store, orgId, "pro");
    expect(await available(orgId)).toBe(3900);
  });
});
