import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { metadataJob, startJobsHarness, testAuth, type JobsHarness } from "../testing/jobs-harness.js";

let harness: JobsHarness;
beforeAll(async () => {
  harness = await startJobsHarness("watchdog", {
    env: { PLANS_JSON: JSON.stringify({ free: { maxRunSeconds: 1 } }), JOBS_WATCHDOG_GRACE_MS: "0", JOBS_WATCHDOG_INTERVAL_MS: "600000" },
  });
});
afterAll(async () => harness?.stop());

describe("job timeout watchdog", () => {
  it("fails a job running past its plan's run time with PROVIDER_TIMEOUT and frees its slot", async () => {
    const auth = testAuth("free");
    const ids: string[] = [];
    for (let index = 0; index < 3; index += 1) ids.push((await harness.client.submitJob({ job: metadataJob() }, { auth })).job!.id);
    await harness.settle();
    await harness.client.startJob({ jobId: ids[0]!, workerId: "w" });
    expect(await harness.service.watchdog.tick()).toBe(0);

    await new Promise((resolve) => setTimeout(resolve, 1100));
    expect(await harness.service.watchdog.tick()).toBe(1);
    await harness.settle();
    expect(await harness.client.getJob({ jobId: ids[0]! }, { auth })).toMatchObject({ status: "failed", error: { code: "PROVIDER_TIMEOUT" } });
    // Dispatched but never started jobs are the worker's to time out, not the watchdog's.
    expect((await harness.client.getJob({ jobId: ids[1]! }, { auth })).status).toBe("dispatched");
    expect((await harness.client.getJob({ jobId: ids[2]! }, { auth })).status).toBe("dispatched");
  });
});
