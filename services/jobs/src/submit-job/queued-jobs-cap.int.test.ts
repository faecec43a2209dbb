import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "kysely";
import { outcomeOf } from "@renderbus/testing";
import { metadataJob, startJobsHarness, testAuth, type JobsHarness } from "../testing/jobs-harness.js";

const codeOf = (promise: Promise<unknown>) => outcomeOf(promise, { message: true });

// One slot and room for 3 waiting jobs, so a handful of submissions reach the cap (SECURITY-AUDIT finding 12).
const PLANS_JSON = JSON.stringify({ free: { concurrency: 1, maxQueuedJobs: 3 } });

let harness: JobsHarness;
beforeAll(async () => {
  harness = await startJobsHarness("queuedcap", { env: { PLANS_JSON } });
});
afterAll(async () => harness?.stop());

const eventCount = async () => (await sql<{ count: number }>`select count(*)::int as count from events`.execute(harness.service.db)).rows[0]!.count;

/** Submits one job and lets the scheduler dispatch what it can, so the org's queue is what the test expects. */
async function submitOne(auth: ReturnType<typeof testAuth>) {
  const { job } = await harness.client.submitJob({ job: metadataJob() }, { auth });
  await harness.settle();
  return job!;
}

describe("queued jobs per org (plan maxQueuedJobs)", () => {
  it("refuses a job with 403 PLAN_LIMIT naming the cap once the org has maxQueuedJobs waiting, and appends nothing", async () => {
    const auth = testAuth("free");
    const running = await submitOne(auth); // takes the org's one slot: held jobs do not count toward the cap
    expect((await harness.client.getJob({ jobId: running.id }, { auth })).status).toBe("dispatched");
    for (let index = 0; index < 3; index += 1) expect((await submitOne(auth)).status).toBe("waiting");

    const before = await eventCount();
    const refused = await codeOf(harness.client.submitJob({ job: metadataJob() }, { auth }));
    expect(refused).toMatch(/^PLAN_LIMIT: The free plan queues at most 3 jobs waiting for a slot \(maxQueuedJobs\); 3 are waiting/);
    expect(await eventCount()).toBe(before);
    expect((await harness.client.listJobs({ limit: 10 }, { auth })).jobs).toHaveLength(4);

    // Another org of the same plan is not affected.
    expect(await codeOf(harness.client.submitJob({ job: metadataJob() }, { auth: testAuth("free") }))).toBe("ok");
  });

  it("takes jobs again once a waiting one leaves the queue (cancelled)", async () => {
    const auth = testAuth("free");
    await submitOne(auth);
    const waiting = [await submitOne(auth), await submitOne(auth), await submitOne(auth)];
    expect(await codeOf(harness.client.submitJob({ job: metadataJob() }, { auth }))).toMatch(/^PLAN_LIMIT/);
    await harness.client.cancelJob({ jobId: waiting[0]!.id }, { auth });
    expect(await codeOf(harness.client.submitJob({ job: metadataJob() }, { auth }))).toBe("ok");
  });

  it("refuses a batch that would take the org past the cap whole: no batch, no job, no event", async () => {
    const auth = testAuth("free");
    await submitOne(auth);
    const first = await harness.client.submitBatch({ jobs: [metadataJob(), metadataJob()] }, { auth });
    await harness.settle();
    expect((await harness.client.getBatch({ batchId: first.id }, { auth })).counts).toMatchObject({ waiting: 2 });

    const before = await eventCount();
    const refused = await codeOf(harness.client.submitBatch({ jobs: [metadataJob(), metadataJob()] }, { auth }));
    expect(refused).toMatch(/^PLAN_LIMIT: The free plan queues at most 3 jobs waiting for a slot \(maxQueuedJobs\); 2 are waiting, no room for these 2 jobs/);
    expect(await eventCount()).toBe(before);
    expect((await harness.client.listJobs({ limit: 10 }, { auth })).jobs).toHaveLength(3);
    expect((await harness.client.listBatches({ limit: 10 }, { auth })).batches).toHaveLength(1);

    // The room that is left is still usable.
    expect(await codeOf(harness.client.submitBatch({ jobs: [metadataJob()] }, { auth }))).toBe("ok");
  });

  it("frees the Idempotency-Key of a refused submission, so the same key works once there is room", async () => {
    const auth = testAuth("free");
    await submitOne(auth);
    const waiting = [await submitOne(auth), await submitOne(auth), await submitOne(auth)];
    expect(await codeOf(harness.client.submitJob({ job: metadataJob(), idempotencyKey: "full" }, { auth }))).toMatch(/^PLAN_LIMIT/);
    await harness.client.cancelJob({ jobId: waiting[0]!.id }, { auth });
    const retried = await harness.client.submitJob({ job: metadataJob(), idempotencyKey: "full" }, { auth });
    expect(retried.replayed).toBe(false);
  });
});
