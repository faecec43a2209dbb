import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Bus } from "@renderbus/bus";
import { AppError } from "@renderbus/errors";
import { newId } from "@renderbus/ids";
import type { jobEvents } from "@renderbus/contracts";
import { startAuthHarness, type AuthHarness } from "../testing/auth-harness.js";
import { grantOrgCredits } from "../admin/index.js";
import { settleJob } from "./credit-ledger.js";
import { addMonthsUtc } from "./monthly-credits.js";

/** An org with exactly `credits` available: a free org whose monthly credits were spent, then granted. */
async function orgWithBalance(harness: AuthHarness, credits: number) {
  const org = await harness.seedOrg("free");
  // Spend the plan's monthly credits on a settled job so the test starts from a known balance.
  const monthly = (await harness.billingClient.getBalance({}, { auth: org.context })).credits;
  const drainJob = newId("job");
  await harness.billingClient.reserveCredits({ orgId: org.orgId, jobId: drainJob, credits: monthly });
  await settleJob(harness.store.db, org.orgId, drainJob, { outcome: "completed", credits: monthly });
  if (credits > 0) await grantOrgCredits(harness.store, org.orgId, credits);
  return org;
}

async function ledgerSum(harness: AuthHarness, orgId: string) {
  const rows = await harness.store.db.selectFrom("credit_ledger").select(["kind", "credits"]).where("org_id", "=", orgId).execute();
  const sum = (kind: string) => rows.filter((row) => row.kind === kind).reduce((total, row) => total + row.credits, 0);
  return { available: sum("grant") - sum("reserve") + sum("release"), reserved: sum("reserve") - sum("capture") - sum("release") };
}

describe("credit ledger", () => {
  let harness: AuthHarness;
  let bus: Bus;
  beforeAll(async () => {
    harness = await startAuthHarness("billing");
    bus = await Bus.connect({ url: harness.config.NATS_URL, name: "test-jobs", namespace: harness.config.NATS_NAMESPACE });
  });
  afterAll(async () => {
    await bus?.close();
    await harness?.stop();
  });

  it("grants the plan's monthly credits when an org is created", async () => {
    const org = await harness.seedOrg("starter");
    const { created_at: createdAt } = await harness.store.db.selectFrom("orgs").select("created_at").where("id", "=", org.orgId).executeTakeFirstOrThrow();
    expect(await harness.billingClient.getBalance({}, { auth: org.context })).toEqual({
      orgId: org.orgId,
      credits: 1900,
      reserved: 0,
      monthlyCredits: 1900,
      renewsAt: addMonthsUtc(createdAt, 1),
      awaitingEmailVerification: false,
    });
    const usage = await harness.billingClient.listUsage({ limit: 10 }, { auth: org.context });
    expect(usage.entries).toMatchObject([{ kind: "grant", credits: 1900, balanceAfter: 1900 }]);
  });

  it("lets exactly 10 of 50 concurrent 1-credit reservations succeed against a balance of 10", async () => {
    const org = await orgWithBalance(harness, 10);
    const results = await Promise.allSettled(
      Array.from({ length: 50 }, () => harness.billingClient.reserveCredits({ orgId: org.orgId, jobId: newId("job"), credits: 1 })),
    );
    const succeeded = results.filter((result) => result.status === "fulfilled");
    const failed = results.filter((result): result is PromiseRejectedResult => result.status === "rejected");
    expect(succeeded).toHaveLength(10);
    expect(failed.every((result) => result.reason instanceof AppError && result.reason.code === "INSUFFICIENT_CREDITS")).toBe(true);
    const balance = await harness.billingClient.getBalance({}, { auth: org.context });
    expect(balance.credits).toBe(0);
    expect(await ledgerSum(harness, org.orgId)).toEqual({ available: balance.credits, reserved: balance.reserved });
  });

  it("reserves once per job however often it is asked", async () => {
    const org = await orgWithBalance(harness, 10);
    const jobId = newId("job");
    await Promise.all(Array.from({ length: 5 }, () => harness.billingClient.reserveCredits({ orgId: org.orgId, jobId, credits: 3 })));
    expect(await harness.billingClient.getBalance({}, { auth: org.context })).toMatchObject({ credits: 7, reserved: 3 });
  });

  it("answers INSUFFICIENT_CREDITS from CheckBalance when the balance is lower than asked", async () => {
    const org = await orgWithBalance(harness, 5);
    expect((await harness.billingClient.checkBalance({ orgId: org.orgId, credits: 5 })).credits).toBe(5);
    await expect(harness.billingClient.checkBalance({ orgId: org.orgId, credits: 6 })).rejects.toMatchObject({ code: "INSUFFICIENT_CREDITS" });
  });

  it("captures the actual cost on job.completed and releases the rest, once, under redelivery", async () => {
    const org = await orgWithBalance(harness, 100);
    const jobId = newId("job");
    await harness.billingClient.reserveCredits({ orgId: org.orgId, jobId, credits: 10 });
    const completed: jobEvents.JobCompleted = {
      jobId,
      orgId: org.orgId,
      result: { url: "http://x/y", metadata: { durationMs: 1000, width: 1, height: 1, fileSize: 1 } } as never,
      cost: { credits: 4, breakdown: "10s video @720p" },
      timing: { createdAt: 1, startedAt: 2, completedAt: 3 } as never,
    };
    // Two publishes with different msg ids: JetStream does not dedupe them, the ledger must.
    await bus.publish("jobs.events.job.completed", completed, { msgId: newId("evt") });
    await bus.publish("jobs.events.job.completed", completed, { msgId: newId("evt") });
    await expect.poll(async () => harness.billingClient.getBalance({}, { auth: org.context }), { timeout: 10_000 }).toMatchObject({ credits: 96, reserved: 0 });
    const usage = await harness.billingClient.listUsage({ limit: 50 }, { auth: org.context });
    const forJob = usage.entries.filter((entry) => entry.jobId === jobId);
    expect(forJob.map((entry) => `${entry.kind}:${entry.credits}`).sort()).toEqual(["capture:4", "release:6", "reserve:10"]);
    expect(await ledgerSum(harness, org.orgId)).toEqual({ available: 96, reserved: 0 });
  });

  it("raises a job's reservation to a larger total by the difference, and never lowers it", async () => {
    const org = await orgWithBalance(harness, 10);
    const jobId = newId("job");
    // The worker reserves the minimum before downloading, then the measured price (twice, as on a redelivery).
    await harness.billingClient.reserveCredits({ orgId: org.orgId, jobId, credits: 1 });
    await harness.billingClient.reserveCredits({ orgId: org.orgId, jobId, credits: 6 });
    await harness.billingClient.reserveCredits({ orgId: org.orgId, jobId, credits: 6 });
    await harness.billingClient.reserveCredits({ orgId: org.orgId, jobId, credits: 2 });
    expect(await harness.billingClient.getBalance({}, { auth: org.context })).toMatchObject({ credits: 4, reserved: 6 });
    // A top-up the balance cannot cover is refused and leaves what was reserved in place.
    await expect(harness.billingClient.reserveCredits({ orgId: org.orgId, jobId, credits: 11 })).rejects.toMatchObject({ code: "INSUFFICIENT_CREDITS" });
    expect(await harness.billingClient.getBalance({}, { auth: org.context })).toMatchObject({ credits: 4, reserved: 6 });
    await settleJob(harness.store.db, org.orgId, jobId, { outcome: "completed", credits: 5 });
    expect(await harness.billingClient.getBalance({}, { auth: org.context })).toMatchObject({ credits: 5, reserved: 0 });
    expect(await ledgerSum(harness, org.orgId)).toEqual({ available: 5, reserved: 0 });
  });

  it("captures the whole cost of a job whose reservation fell short (a broken invariant, logged as an error), never below zero", async () => {
    const org = await orgWithBalance(harness, 60);
    const jobId = newId("job");
    await harness.billingClient.reserveCredits({ orgId: org.orgId, jobId, credits: 2 });
    await bus.publish("jobs.events.job.completed", { jobId, orgId: org.orgId, cost: { credits: 50, breakdown: "long" } }, { msgId: newId("evt") });
    await expect.poll(async () => harness.billingClient.getBalance({}, { auth: org.context }), { timeout: 10_000 }).toMatchObject({ credits: 10, reserved: 0 });
    const usage = await harness.billingClient.listUsage({ limit: 50 }, { auth: org.context });
    expect(usage.entries.filter((entry) => entry.jobId === jobId && entry.kind === "capture").map((entry) => entry.credits)).toEqual([50]);
    expect(harness.logs.some((line) => line.includes(jobId) && line.includes("exceeded its reservation") && line.includes('"level":50'))).toBe(true);

    // With too little left the balance stops at zero and the uncollected part is in the error.
    const poorJob = newId("job");
    await harness.billingClient.reserveCredits({ orgId: org.orgId, jobId: poorJob, credits: 2 });
    const result = await settleJob(harness.store.db, org.orgId, poorJob, { outcome: "completed", credits: 50 });
    expect(result).toEqual({ settled: true, captured: 10, shortfall: 48, uncollected: 40 });
    expect(await harness.billingClient.getBalance({}, { auth: org.context })).toMatchObject({ credits: 0, reserved: 0 });
    expect(await ledgerSum(harness, org.orgId)).toEqual({ available: 0, reserved: 0 });
  });

  it("releases the reservation of failed and cancelled jobs", async () => {
    const org = await orgWithBalance(harness, 20);
    const failedJob = newId("job");
    const cancelledJob = newId("job");
    await harness.billingClient.reserveCredits({ orgId: org.orgId, jobId: failedJob, credits: 5 });
    await harness.billingClient.reserveCredits({ orgId: org.orgId, jobId: cancelledJob, credits: 7 });
    expect(await harness.billingClient.getBalance({}, { auth: org.context })).toMatchObject({ credits: 8, reserved: 12 });
    await bus.publish("jobs.events.job.failed", { jobId: failedJob, orgId: org.orgId, error: { code: "PROVIDER_ERROR", message: "x" } }, { msgId: newId("evt") });
    await bus.publish("jobs.events.job.cancelled", { jobId: cancelledJob, orgId: org.orgId, fromStatus: "running", cancelledAt: 1 }, { msgId: newId("evt") });
    await bus.publish("jobs.events.job.failed", { jobId: failedJob, orgId: org.orgId, error: { code: "PROVIDER_ERROR", message: "x" } }, { msgId: newId("evt") });
    await expect.poll(async () => harness.billingClient.getBalance({}, { auth: org.context }), { timeout: 10_000 }).toMatchObject({ credits: 20, reserved: 0 });
    expect(await ledgerSum(harness, org.orgId)).toEqual({ available: 20, reserved: 0 });
  });

  it("refuses to reserve for a job settled before its worker reserved (cancelled meanwhile), so nothing stays reserved", async () => {
    const org = await orgWithBalance(harness, 20);
    const jobId = newId("job");
    await bus.publish("jobs.events.job.cancelled", { jobId, orgId: org.orgId, fromStatus: "dispatched", cancelledAt: 1 }, { msgId: newId("evt") });
    await expect.poll(async () => (await harness.store.db.selectFrom("settled_jobs").select("job_id").where("job_id", "=", jobId).execute()).length, { timeout: 10_000 }).toBe(1);

    await harness.billingClient.reserveCredits({ orgId: org.orgId, jobId, credits: 5 });
    expect(await harness.billingClient.getBalance({}, { auth: org.context })).toMatchObject({ credits: 20, reserved: 0 });
    expect(await harness.store.db.selectFrom("credit_ledger").select("kind").where("job_id", "=", jobId).execute()).toEqual([]);
    expect(await ledgerSum(harness, org.orgId)).toEqual({ available: 20, reserved: 0 });
  });

  it("settles a job racing its reservation either way round without leaving credits reserved", async () => {
    const org = await orgWithBalance(harness, 100);
    const jobIds = Array.from({ length: 20 }, () => newId("job"));
    await Promise.all(
      jobIds.flatMap((jobId) => [
        harness.billingClient.reserveCredits({ orgId: org.orgId, jobId, credits: 3 }),
        settleJob(harness.store.db, org.orgId, jobId, { outcome: "released", reason: "cancelled" }),
      ]),
    );
    expect(await harness.billingClient.getBalance({}, { auth: org.context })).toMatchObject({ credits: 100, reserved: 0 });
    expect(await ledgerSum(harness, org.orgId)).toEqual({ available: 100, reserved: 0 });
  });

  it("pages usage newest first with a cursor", async () => {
    const org = await orgWithBalance(harness, 0);
    for (let index = 1; index <= 5; index++) await grantOrgCredits(harness.store, org.orgId, index);
    const first = await harness.billingClient.listUsage({ limit: 3 }, { auth: org.context });
    expect(first.entries.map((entry) => entry.credits)).toEqual([5, 4, 3]);
    expect(first.nextCursor).toBeTruthy();
    const second = await harness.billingClient.listUsage({ limit: 3, cursor: first.nextCursor }, { auth: org.context });
    expect(second.entries.slice(0, 2).map((entry) => entry.credits)).toEqual([2, 1]);
  });
});

