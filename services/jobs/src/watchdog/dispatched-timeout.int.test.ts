import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { metadataJob, startJobsHarness, testAuth, type JobsHarness } from "../testing/jobs-harness.js";
import { notStartedMessage } from "./job-timeout-watchdog.js";

const DISPATCHED_TIMEOUT_MS = 800;

let harness: JobsHarness;
beforeAll(async () => {
  harness = await startJobsHarness("dispatchedwatchdog", {
    env: {
      PLANS_JSON: JSON.stringify({ free: { concurrency: 1 } }),
      DISPATCHED_TIMEOUT_MS: String(DISPATCHED_TIMEOUT_MS),
      // Ticks are driven by the test.
      JOBS_WATCHDOG_INTERVAL_MS: "600000",
    },
  });
});
afterAll(async () => harness?.stop());

describe("watchdog for jobs stuck in dispatched (SECURITY-AUDIT finding 16)", () => {
  it("fails a job no worker started within DISPATCHED_TIMEOUT_MS with a clear PROVIDER_ERROR, and its slot goes to the org's next job", async () => {
    const auth = testAuth("free");
    const first = (await harness.client.submitJob({ job: metadataJob() }, { auth })).job!.id;
    const second = (await harness.client.submitJob({ job: metadataJob() }, { auth })).job!.id;
    await harness.settle();
    // One slot: the first is dispatched (its dispatch then lost: no worker here), the second waits for the slot.
    expect((await harness.client.getJob({ jobId: first }, { auth })).status).toBe("dispatched");
    expect((await harness.client.getJob({ jobId: second }, { auth })).status).toBe("waiting");
    expect(await harness.service.watchdog.tick()).toBe(0);

    await new Promise((resolve) => setTimeout(resolve, DISPATCHED_TIMEOUT_MS + 100));
    expect(await harness.service.watchdog.tick()).toBe(1);
    await harness.settle();
    expect(await harness.client.getJob({ jobId: first }, { auth })).toMatchObject({
      status: "failed",
      error: { code: "PROVIDER_ERROR", message: notStartedMessage(DISPATCHED_TIMEOUT_MS) },
    });
    // The freed slot went to the waiting job.
    await expect.poll(async () => (await harness.client.getJob({ jobId: second }, { auth })).status, { timeout: 10_000 }).toBe("dispatched");
  });

  it("leaves a started job to the run-time limit", async () => {
    const auth = testAuth("pro");
    const jobId = (await harness.client.submitJob({ job: metadataJob() }, { auth })).job!.id;
    await harness.settle();
    await harness.client.startJob({ jobId, workerId: "w" });
    await new Promise((resolve) => setTimeout(resolve, DISPATCHED_TIMEOUT_MS + 100));
    await harness.service.watchdog.tick();
    expect((await harness.client.getJob({ jobId }, { auth })).status).toBe("running");
  });
});
