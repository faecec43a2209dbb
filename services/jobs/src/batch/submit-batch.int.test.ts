import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { outcomeOf } from "@renderbus/testing";
import type { jobEvents } from "@renderbus/contracts";
import { metadataJob, startJobsHarness, STREAMS, testAuth, type JobsHarness } from "../testing/jobs-harness.js";

const codeOf = (promise: Promise<unknown>) => outcomeOf(promise, { message: true });

let harness: JobsHarness;
beforeAll(async () => {
  harness = await startJobsHarness("batches");
});
afterAll(async () => harness?.stop());

const result = { url: "", metadata: {}, outputKey: "out/x", contentType: "application/json" };

describe("SubmitBatch", () => {
  it("creates the batch and its jobs, publishes batch.created, and counts jobs per status until completed", async () => {
    const created = await harness.collect<jobEvents.BatchCreated>(STREAMS.jobEvents, "jobs.events.batch.created");
    const auth = testAuth("free");
    const batch = await harness.client.submitBatch({ jobs: [metadataJob(), metadataJob(), metadataJob()] }, { auth });
    expect(batch).toMatchObject({ orgId: auth.orgId, jobCount: 3, status: "running" });
    expect(batch.jobIds).toHaveLength(3);
    await harness.settle();

    const [message] = await created.waitFor(1, (m) => m.data.batchId === batch.id);
    expect(message!.data.jobIds).toEqual(batch.jobIds);
    expect((await harness.client.getBatch({ batchId: batch.id }, { auth })).counts).toEqual({ waiting: 1, dispatched: 2, running: 0, completed: 0, failed: 0, cancelled: 0 });
    const listed = await harness.client.listJobs({ limit: 10, batchId: batch.id }, { auth });
    expect(listed.jobs.map((job) => job.id).sort()).toEqual([...batch.jobIds].sort());

    const [first, second, third] = batch.jobIds as [string, string, string];
    await harness.client.startJob({ jobId: first, workerId: "w" });
    await harness.client.completeJob({ jobId: first, result, cost: { credits: 1, breakdown: "metadata" } });
    await harness.client.failJob({ jobId: second, error: { code: "INPUT_ERROR", message: "unreachable" } });
    await harness.settle();
    expect(await harness.client.getBatch({ batchId: batch.id }, { auth })).toMatchObject({
      status: "running",
      counts: { waiting: 0, dispatched: 1, running: 0, completed: 1, failed: 1, cancelled: 0 },
    });
    await harness.client.cancelJob({ jobId: third }, { auth });
    const finished = await harness.client.getBatch({ batchId: batch.id }, { auth });
    expect(finished).toMatchObject({ status: "completed", completedAt: expect.any(Number), counts: { completed: 1, failed: 1, cancelled: 1 } });
  });

  it("lists only the named batch's jobs, not the org's other batches or lone jobs", async () => {
    const auth = testAuth("pro");
    const batch = await harness.client.submitBatch({ jobs: [metadataJob(), metadataJob()] }, { auth });
    const other = await harness.client.submitBatch({ jobs: [metadataJob()] }, { auth });
    const { job: lone } = await harness.client.submitJob({ job: metadataJob() }, { auth });
    expect((await harness.client.listJobs({ limit: 10 }, { auth })).jobs).toHaveLength(4);
    const listed = await harness.client.listJobs({ limit: 10, batchId: batch.id }, { auth });
    expect(listed.jobs.map((job) => job.id).sort()).toEqual([...batch.jobIds].sort());
    expect(listed.jobs.map((job) => job.id)).not.toContain(lone!.id);
    expect((await harness.client.listJobs({ limit: 10, batchId: other.id }, { auth })).jobs.map((job) => job.id)).toEqual(other.jobIds);
  });

  it("rejects the whole batch when one job is invalid, naming it, and creates no job", async () => {
    const auth = testAuth("pro");
    const bad = { type: "thumbnail", inputs: { source: "https://x.test/a.mp4" }, params: { width: -5 }, metadata: {} };
    expect(await codeOf(harness.client.submitBatch({ jobs: [metadataJob(), bad] }, { auth }))).toMatch(/^VALIDATION_ERROR: jobs\[1\]\.params\.width/);
    expect(await codeOf(harness.client.submitBatch({ jobs: [metadataJob(), { ...metadataJob(), type: "nope" }] }, { auth }))).toMatch(/^INVALID_JOB_TYPE/);
    expect((await harness.client.listJobs({ limit: 10 }, { auth })).jobs).toHaveLength(0);
  });

  it("returns 403 PLAN_LIMIT above the plan's batch size and 400 for an empty batch", async () => {
    const auth = testAuth("free");
    expect(await codeOf(harness.client.submitBatch({ jobs: Array.from({ length: 6 }, () => metadataJob()) }, { auth }))).toMatch(/^PLAN_LIMIT/);
    expect(await codeOf(harness.client.submitBatch({ jobs: [] }, { auth }))).toMatch(/^VALIDATION_ERROR: jobs/);
    expect(await codeOf(harness.client.submitBatch({ jobs: Array.from({ length: 5 }, () => metadataJob()) }, { auth }))).toBe("ok");
  });

  it("checks credits once for the sum of minimum prices", async () => {
    const auth = testAuth("pro");
    harness.billing.balances.set(auth.orgId, 2);
    const checksBefore = harness.billing.checks;
    expect(await codeOf(harness.client.submitBatch({ jobs: [metadataJob(), metadataJob(), metadataJob()] }, { auth }))).toMatch(/^INSUFFICIENT_CREDITS/);
    expect(harness.billing.checks - checksBefore).toBe(1);
    expect(await codeOf(harness.client.submitBatch({ jobs: [metadataJob(), metadataJob()] }, { auth }))).toBe("ok");
  });

  it("replays a batch submitted again with the same Idempotency-Key", async () => {
    const auth = testAuth("pro");
    const first = await harness.client.submitBatch({ jobs: [metadataJob()], idempotencyKey: "b1" }, { auth });
    const again = await harness.client.submitBatch({ jobs: [metadataJob()], idempotencyKey: "b1" }, { auth });
    expect(again.id).toBe(first.id);
    expect((await harness.client.listJobs({ limit: 10 }, { auth })).jobs).toHaveLength(1);
  });

  it("returns 404 NOT_FOUND to another org for the batch id", async () => {
    const [a, b] = [testAuth("pro"), testAuth("pro")];
    const batch = await harness.client.submitBatch({ jobs: [metadataJob()] }, { auth: a });
    expect(await codeOf(harness.client.getBatch({ batchId: batch.id }, { auth: b }))).toMatch(/^NOT_FOUND/);
  });
});

describe("ListBatches", () => {
  it("lists only the caller's batches, newest first, filtered by status, walking pages with the cursor", async () => {
    const auth = testAuth("pro");
    const other = testAuth("pro");
    const submitted: string[] = [];
    for (let i = 0; i < 3; i += 1) submitted.push((await harness.client.submitBatch({ jobs: [metadataJob()] }, { auth })).id);
    await harness.client.submitBatch({ jobs: [metadataJob()] }, { auth: other });
    const cancelledBatch = await harness.client.getBatch({ batchId: submitted[0]! }, { auth });
    await harness.client.cancelJob({ jobId: cancelledBatch.jobIds[0]! }, { auth });

    const first = await harness.client.listBatches({ limit: 2 }, { auth });
    expect(first.batches.map((batch) => batch.id)).toEqual([submitted[2], submitted[1]]);
    expect(first.nextCursor).toEqual(expect.any(String));
    const second = await harness.client.listBatches({ limit: 2, cursor: first.nextCursor! }, { auth });
    expect(second.batches.map((batch) => batch.id)).toEqual([submitted[0]]);
    expect(second.nextCursor).toBeUndefined();

    const completed = await harness.client.listBatches({ limit: 10, status: "completed" }, { auth });
    expect(completed.batches.map((batch) => batch.id)).toEqual([submitted[0]]);
    expect(completed.batches[0]!.counts).toMatchObject({ cancelled: 1 });
  });

  it("refuses a bad status, limit or cursor", async () => {
    const auth = testAuth("pro");
    expect(await codeOf(harness.client.listBatches({ limit: 10, status: "done" }, { auth }))).toMatch(/^VALIDATION_ERROR: status/);
    expect(await codeOf(harness.client.listBatches({ limit: 1000 }, { auth }))).toMatch(/^VALIDATION_ERROR: limit/);
    expect(await codeOf(harness.client.listBatches({ limit: 10, cursor: "not-a-cursor" }, { auth }))).toMatch(/^VALIDATION_ERROR: cursor/);
  });
});
