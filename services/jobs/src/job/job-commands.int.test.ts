import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { outcomeOf } from "@renderbus/testing";
import type { jobEvents } from "@renderbus/contracts";
import { metadataJob, startJobsHarness, STREAMS, testAuth, type JobsHarness } from "../testing/jobs-harness.js";

let harness: JobsHarness;
beforeAll(async () => {
  harness = await startJobsHarness("jobcommands");
});
afterAll(async () => harness?.stop());

const result = { url: "", metadata: { durationMs: 1000 }, outputKey: "out/x", contentType: "application/json" };

/** A free org with two jobs holding its slots and one waiting (third). */
async function orgWithThreeJobs() {
  const auth = testAuth("free");
  const ids: string[] = [];
  for (let index = 0; index < 3; index += 1) ids.push((await harness.client.submitJob({ job: metadataJob() }, { auth })).job!.id);
  await harness.settle();
  return { auth, ids };
}

describe("CancelJob", () => {
  it("cancels a job from waiting, dispatched and running, and publishes job.cancelled with where it came from", async () => {
    const cancelled = await harness.collect<jobEvents.JobCancelled>(STREAMS.jobEvents, "jobs.events.job.cancelled");
    const { auth, ids } = await orgWithThreeJobs();
    const [running, dispatched, waiting] = ids as [string, string, string];
    await harness.client.startJob({ jobId: running, workerId: "w1" });
    expect((await harness.client.getJob({ jobId: waiting }, { auth })).status).toBe("waiting");

    const fromWaiting = await harness.client.cancelJob({ jobId: waiting }, { auth });
    expect(fromWaiting).toMatchObject({ status: "cancelled", timing: { completedAt: expect.any(Number) } });
    expect((await harness.client.cancelJob({ jobId: dispatched }, { auth })).status).toBe("cancelled");
    expect((await harness.client.cancelJob({ jobId: running }, { auth })).status).toBe("cancelled");

    const messages = await cancelled.waitFor(3, (message) => message.data.orgId === auth.orgId);
    expect(Object.fromEntries(messages.map((message) => [message.data.jobId, message.data.fromStatus]))).toEqual({
      [waiting]: "waiting",
      [dispatched]: "dispatched",
      [running]: "running",
    });
  });

  it("returns 409 CONFLICT when cancelling a completed, failed or cancelled job", async () => {
    const { auth, ids } = await orgWithThreeJobs();
    const [completed, failed, cancelled] = ids as [string, string, string];
    await harness.client.completeJob({ jobId: completed, result, cost: { credits: 1, breakdown: "metadata" } });
    await harness.client.failJob({ jobId: failed, error: { code: "PROVIDER_ERROR", message: "boom" } });
    await harness.client.cancelJob({ jobId: cancelled }, { auth });
    for (const jobId of ids) expect(await outcomeOf(harness.client.cancelJob({ jobId }, { auth }))).toBe("CONFLICT");
  });

  it("tells a worker its job was cancelled: StartJob and CompleteJob answer CONFLICT", async () => {
    const { auth, ids } = await orgWithThreeJobs();
    await harness.client.cancelJob({ jobId: ids[0]! }, { auth });
    expect(await outcomeOf(harness.client.startJob({ jobId: ids[0]!, workerId: "w1" }))).toBe("CONFLICT");
    expect(await outcomeOf(harness.client.completeJob({ jobId: ids[0]!, result, cost: { credits: 1, breakdown: "" } }))).toBe("CONFLICT");
  });
});

describe("worker reports", () => {
  it("records running, then completed with result, cost and timing, and publishes job.running and job.completed", async () => {
    const running = await harness.collect<jobEvents.JobStarted>(STREAMS.jobEvents, "jobs.events.job.running");
    const completed = await harness.collect<jobEvents.JobCompleted>(STREAMS.jobEvents, "jobs.events.job.completed");
    const { auth, ids } = await orgWithThreeJobs();
    const jobId = ids[0]!;
    const started = await harness.client.startJob({ jobId, workerId: "w1" });
    expect(started.job).toMatchObject({ status: "running", timing: { startedAt: expect.any(Number) } });
    // Repeated reports change nothing.
    await harness.client.startJob({ jobId, workerId: "w1" });
    const done = await harness.client.completeJob({ jobId, result, cost: { credits: 3, breakdown: "0m25s video @720p" } });
    await harness.client.completeJob({ jobId, result, cost: { credits: 3, breakdown: "0m25s video @720p" } });
    expect(done.job).toMatchObject({ status: "completed", cost: { credits: 3 }, result: { outputKey: "out/x", metadata: { durationMs: 1000 } } });

    const [runningMessage] = await running.waitFor(1, (message) => message.data.jobId === jobId);
    expect(runningMessage!.headers["Rb-Event-Type"]).toBe("job.running");
    expect(runningMessage!.data).toMatchObject({ type: "extract.metadata", workerId: "w1" });
    const [completedMessage] = await completed.waitFor(1, (message) => message.data.jobId === jobId);
    expect(completedMessage!.data.timing).toMatchObject({ createdAt: expect.any(Number), startedAt: expect.any(Number), completedAt: expect.any(Number) });
    await harness.settle();
    expect(completed.messages.filter((message) => message.data.jobId === jobId)).toHaveLength(1);
    expect((await harness.client.getJob({ jobId }, { auth })).status).toBe("completed");
  });

  it("answers NOT_FOUND for a report about an unknown job", async () => {
    expect(await outcomeOf(harness.client.startJob({ jobId: "job_01ARZ3NDEKTSV4RRFFQ69G5FAV", workerId: "w" }))).toBe("NOT_FOUND");
  });
});

describe("tenant isolation", () => {
  it("returns 404 NOT_FOUND to org B for org A's job, and lets B neither read nor cancel it", async () => {
    const [a, b] = [testAuth("pro"), testAuth("pro")];
    const { job } = await harness.client.submitJob({ job: metadataJob() }, { auth: a });
    expect(await outcomeOf(harness.client.getJob({ jobId: job!.id }, { auth: b }))).toBe("NOT_FOUND");
    expect(await outcomeOf(harness.client.cancelJob({ jobId: job!.id }, { auth: b }))).toBe("NOT_FOUND");
    expect((await harness.client.listJobs({ limit: 100 }, { auth: b })).jobs).toHaveLength(0);
    expect((await harness.client.getJob({ jobId: job!.id }, { auth: a })).status).not.toBe("cancelled");
  });
});
