import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { outcomeOf } from "@renderbus/testing";
import { readStream } from "@renderbus/db";
import { AppError } from "@renderbus/errors";
import type { jobEvents } from "@renderbus/contracts";
import { metadataJob, startJobsHarness, STREAMS, testAuth, type JobsHarness } from "../testing/jobs-harness.js";

const codeOf = (promise: Promise<unknown>) => outcomeOf(promise, { message: true });

let harness: JobsHarness;
beforeAll(async () => {
  harness = await startJobsHarness("submitjob");
});
afterAll(async () => harness?.stop());

describe("SubmitJob", () => {
  it("appends JobQueued and publishes job.queued on JetStream with the event id as message id", async () => {
    const queued = await harness.collect<jobEvents.JobQueued>(STREAMS.jobEvents, "jobs.events.job.queued");
    const auth = testAuth("pro");
    const { job, replayed } = await harness.client.submitJob({ job: metadataJob() }, { auth });
    expect(replayed).toBe(false);
    expect(job).toMatchObject({ orgId: auth.orgId, type: "extract.metadata", status: "waiting", inputs: { source: "https://example.com/video.mp4" } });
    expect(job!.id).toMatch(/^job_/);

    const stream = await readStream(harness.service.db, job!.id);
    expect(stream[0]).toMatchObject({ type: "JobQueued", version: 1, data: { jobId: job!.id, orgId: auth.orgId, plan: "pro", limits: { concurrency: 10 } } });

    const [message] = await queued.waitFor(1, (m) => m.data.jobId === job!.id);
    expect(message!.msgId).toBe(stream[0]!.eventId);
    expect(message!.headers).toMatchObject({ "Rb-Event-Type": "job.queued", "Rb-Org-Id": auth.orgId });
    expect(message!.data).toMatchObject({ jobId: job!.id, type: "extract.metadata", submittedBy: auth.userId });
  });

  it("dispatches an idle org's job at once: job.dispatched plus the work message on jobs.dispatch.<type>.<jobId>", async () => {
    const work = await harness.collect<jobEvents.JobDispatch>(STREAMS.jobDispatch, "jobs.dispatch.extract.metadata.>");
    const auth = testAuth("free");
    const { job } = await harness.client.submitJob({ job: metadataJob() }, { auth });
    const [message] = await work.waitFor(1, (m) => m.data.jobId === job!.id);
    expect(message!.data).toMatchObject({ orgId: auth.orgId, type: "extract.metadata", limits: { maxRunSeconds: 120, concurrency: 2 } });
    expect((await harness.client.getJob({ jobId: job!.id }, { auth })).status).toBe("dispatched");
  });

  it("returns 400 INVALID_JOB_TYPE for an unknown type and VALIDATION_ERROR naming the field", async () => {
    const auth = testAuth("pro");
    expect(await codeOf(harness.client.submitJob({ job: { ...metadataJob(), type: "explode" } }, { auth }))).toMatch(/^INVALID_JOB_TYPE/);
    expect(await codeOf(harness.client.submitJob({ job: { ...metadataJob(), inputs: {} } }, { auth }))).toMatch(/^VALIDATION_ERROR: inputs\.source/);
    expect(
      await codeOf(harness.client.submitJob({ job: { type: "thumbnail", inputs: { source: "https://x.test/a.mp4" }, params: { format: "gif" }, metadata: {} } }, { auth })),
    ).toMatch(/^VALIDATION_ERROR: params\.format/);
    expect(await codeOf(harness.client.submitJob({ job: { ...metadataJob(), inputs: { source: "ftp://x/y" } } }, { auth }))).toMatch(/^VALIDATION_ERROR: inputs\.source/);
  });

  it("returns 403 PLAN_LIMIT for a job type the free plan does not include", async () => {
    const spec = { type: "watermark.add", inputs: { source: "https://x.test/a.mp4" }, params: { text: "hi" }, metadata: {} };
    expect(await codeOf(harness.client.submitJob({ job: spec }, { auth: testAuth("free") }))).toMatch(/^PLAN_LIMIT/);
    expect(await codeOf(harness.client.submitJob({ job: spec }, { auth: testAuth("starter") }))).toBe("ok");
  });

  it("returns 402 INSUFFICIENT_CREDITS when the balance cannot cover the minimum price, and stores nothing", async () => {
    const auth = testAuth("pro");
    harness.billing.balances.set(auth.orgId, 0);
    expect(await codeOf(harness.client.submitJob({ job: metadataJob() }, { auth }))).toMatch(/^INSUFFICIENT_CREDITS/);
    expect((await harness.client.listJobs({ limit: 10 }, { auth })).jobs).toHaveLength(0);
  });

  it("returns 401 UNAUTHORIZED without an auth context", async () => {
    expect(await codeOf(harness.client.submitJob({ job: metadataJob() }))).toMatch(/^UNAUTHORIZED/);
  });
});

describe("SubmitJob with an Idempotency-Key", () => {
  it("replays the first response for the same key and body", async () => {
    const auth = testAuth("pro");
    const first = await harness.client.submitJob({ job: metadataJob(), idempotencyKey: "k1" }, { auth });
    const again = await harness.client.submitJob({ job: metadataJob(), idempotencyKey: "k1" }, { auth });
    expect(again.replayed).toBe(true);
    expect(again.job).toEqual(first.job);
    expect((await harness.client.listJobs({ limit: 10 }, { auth })).jobs).toHaveLength(1);
  });

  it("treats the same body with keys in another order as the same request", async () => {
    const auth = testAuth("pro");
    const spec = { type: "thumbnail", inputs: { source: "https://x.test/a.mp4" }, params: { timestamp: 2, width: 320 }, metadata: {} };
    const first = await harness.client.submitJob({ job: spec, idempotencyKey: "order" }, { auth });
    const reordered = { ...spec, params: { width: 320, timestamp: 2 } };
    const again = await harness.client.submitJob({ job: reordered, idempotencyKey: "order" }, { auth });
    expect(again).toMatchObject({ replayed: true, job: { id: first.job!.id } });
  });

  it("returns 422 IDEMPOTENCY_KEY_REUSED for the same key with a different body", async () => {
    const auth = testAuth("pro");
    await harness.client.submitJob({ job: metadataJob(), idempotencyKey: "k2" }, { auth });
    expect(await codeOf(harness.client.submitJob({ job: metadataJob("https://example.com/other.mp4"), idempotencyKey: "k2" }, { auth }))).toMatch(
      /^IDEMPOTENCY_KEY_REUSED/,
    );
  });

  it("scopes keys to the org: another org's same key creates its own job", async () => {
    const [a, b] = [testAuth("pro"), testAuth("pro")];
    const first = await harness.client.submitJob({ job: metadataJob(), idempotencyKey: "shared" }, { auth: a });
    const second = await harness.client.submitJob({ job: metadataJob(), idempotencyKey: "shared" }, { auth: b });
    expect(second.replayed).toBe(false);
    expect(second.job!.id).not.toBe(first.job!.id);
  });

  it("returns 409 CONFLICT while the first request with the key is still in flight", async () => {
    const auth = testAuth("pro");
    harness.billing.delayMs = 400;
    try {
      const first = harness.client.submitJob({ job: metadataJob(), idempotencyKey: "slow" }, { auth });
      await new Promise((resolve) => setTimeout(resolve, 100));
      expect(await codeOf(harness.client.submitJob({ job: metadataJob(), idempotencyKey: "slow" }, { auth }))).toMatch(/^CONFLICT/);
      await first;
    } finally {
      harness.billing.delayMs = 0;
    }
    expect((await harness.client.submitJob({ job: metadataJob(), idempotencyKey: "slow" }, { auth })).replayed).toBe(true);
  });

  it("creates exactly one job under 20 concurrent identical requests", async () => {
    const auth = testAuth("pro");
    const outcomes = await Promise.all(
      Array.from({ length: 20 }, () => harness.client.submitJob({ job: metadataJob(), idempotencyKey: "burst" }, { auth }).then(
        (response) => response,
        (error: AppError) => error,
      )),
    );
    const successes = outcomes.filter((outcome): outcome is { job: any; replayed: boolean } => !(outcome instanceof AppError));
    const failures = outcomes.filter((outcome): outcome is AppError => outcome instanceof AppError);
    expect(failures.every((error) => error.code === "CONFLICT")).toBe(true);
    expect(new Set(successes.map((success) => success.job.id)).size).toBe(1);
    expect(successes.filter((success) => !success.replayed)).toHaveLength(1);
    expect((await harness.client.listJobs({ limit: 100 }, { auth })).jobs).toHaveLength(1);
  });

  it("frees the key when the first request fails, so a retry with the same key can succeed", async () => {
    const auth = testAuth("pro");
    harness.billing.balances.set(auth.orgId, 0);
    expect(await codeOf(harness.client.submitJob({ job: metadataJob(), idempotencyKey: "retry" }, { auth }))).toMatch(/^INSUFFICIENT_CREDITS/);
    harness.billing.balances.set(auth.orgId, 10);
    expect((await harness.client.submitJob({ job: metadataJob(), idempotencyKey: "retry" }, { auth })).replayed).toBe(false);
  });
});

describe("ListJobTypes", () => {
  it("lists every type with its params JSON Schema, the plans that include it and its price rule", async () => {
    const { jobTypes } = await harness.client.listJobTypes({}, { auth: testAuth("free") });
    expect(jobTypes.map((type) => type.name).sort()).toEqual(
      ["audio.extract", "caption.burn", "extract.metadata", "qr.generate", "thumbnail", "transcode", "watermark.add"].sort(),
    );
    const watermark = jobTypes.find((type) => type.name === "watermark.add")!;
    expect(watermark.plans).toEqual(["starter", "pro", "scale"]);
    expect(watermark.inputs).toEqual(["source", "image"]);
    const thumbnail = jobTypes.find((type) => type.name === "thumbnail")!;
    expect(thumbnail.plans).toEqual(["free", "starter", "pro", "scale"]);
    expect(thumbnail.paramsSchema).toMatchObject({ type: "object", properties: { format: expect.any(Object) } });
    expect(thumbnail.price).toMatch(/credit/);
  });
});
