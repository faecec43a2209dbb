import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { metadataJob, startJobsHarness, testAuth, type JobsHarness } from "../testing/jobs-harness.js";

let harness: JobsHarness;
beforeAll(async () => {
  // A recheck period longer than the test: every pass below is one the scheduler chose to run.
  harness = await startJobsHarness("fullorg", { env: { JOBS_SCHEDULER_FULL_RECHECK_MS: "600000" } });
});
afterAll(async () => harness?.stop());

describe("scheduling an org whose slots are all taken", () => {
  it("runs no pass for its submissions, and dispatches the next job as soon as one leaves its slot", async () => {
    const auth = testAuth("free"); // concurrency 2; no worker here, so dispatched jobs keep their slot
    const submit = async () => (await harness.client.submitJob({ job: metadataJob() }, { auth })).job!;
    const holders = [await submit(), await submit()];
    const next = await submit();
    await harness.settle();
    const status = async (jobId: string) => (await harness.client.getJob({ jobId }, { auth })).status;
    expect(await Promise.all(holders.map((job) => status(job.id)))).toEqual(["dispatched", "dispatched"]);
    expect(await status(next.id)).toBe("waiting");

    const before = harness.service.scheduler.stats();
    for (let index = 0; index < 5; index += 1) await submit();
    await harness.settle();
    const after = harness.service.scheduler.stats();
    expect(after.skipped - before.skipped).toBe(5);
    expect(after.passes).toBe(before.passes);

    await harness.client.cancelJob({ jobId: holders[0]!.id }, { auth });
    await harness.settle();
    expect(await status(next.id)).toBe("dispatched");
    expect(harness.service.scheduler.stats().passes).toBeGreaterThan(after.passes);
  });
});
