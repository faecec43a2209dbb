import { describe, expect, it } from "vitest";
import { batchCompletedPayload, jobCompletedPayload, jobFailedPayload, jobProgressPayload, jobRunningPayload, webhookTestPayload } from "./payloads.js";

// Receivers get these exact bytes: the expected bodies are written out, member order included (docs/webhooks.md).
describe("webhook payloads", () => {
  const timing = { createdAt: 1000, dispatchedAt: 1100, startedAt: 1200, completedAt: 3000 };

  it("job.running carries the job type and when it was created and started", () => {
    const body = jobRunningPayload({ jobId: "job_1", orgId: "org_1", type: "transcode", createdAt: 1000, startedAt: 1200, workerId: "w" });
    expect(JSON.stringify(body)).toBe('{"event":"job.running","jobId":"job_1","type":"transcode","timing":{"createdAt":1000,"startedAt":1200}}');
  });

  it("job.completed carries the result, the cost and the timing; metadata that does not apply is null", () => {
    const body = jobCompletedPayload({
      jobId: "job_1",
      orgId: "org_1",
      result: { url: "https://x/out.png", metadata: { width: 320, height: 240 }, outputKey: "k", contentType: "image/png" },
      cost: { credits: 1, breakdown: "thumbnail" },
      timing,
    });
    expect(JSON.stringify(body)).toBe(
      '{"event":"job.completed","jobId":"job_1","result":{"url":"https://x/out.png","metadata":{"durationMs":null,"width":320,"height":240,"fileSize":null}},' +
        '"cost":{"credits":1,"breakdown":"thumbnail"},"timing":{"createdAt":1000,"startedAt":1200,"completedAt":3000}}',
    );
  });

  it("job.failed carries the error and no cost member at all", () => {
    const body = jobFailedPayload({ jobId: "job_2", orgId: "org_1", error: { code: "INPUT_ERROR", message: "unreachable" }, timing: { createdAt: 1000 } });
    expect(JSON.stringify(body)).toBe('{"event":"job.failed","jobId":"job_2","error":{"code":"INPUT_ERROR","message":"unreachable"},"timing":{"createdAt":1000,"startedAt":null,"completedAt":null}}');
  });

  it("batch.completed carries the counts by terminal status", () => {
    const body = batchCompletedPayload({ batchId: "batch_1", jobCount: 3, counts: { completed: 2, failed: 1, cancelled: 0 }, createdAt: 1000, completedAt: 5000 });
    expect(JSON.stringify(body)).toBe('{"event":"batch.completed","batchId":"batch_1","jobCount":3,"counts":{"completed":2,"failed":1,"cancelled":0},"timing":{"createdAt":1000,"completedAt":5000}}');
  });

  it("job.progress carries the job, its org, the reading and the job's timing; unknown figures are null", () => {
    const timing = { createdAt: 1000, startedAt: 2000 };
    expect(JSON.stringify(jobProgressPayload({ orgId: "org_1", jobId: "job_1", percent: 42.5, etaMs: 9000, updatedAt: 5000, timing }))).toBe(
      '{"event":"job.progress","jobId":"job_1","orgId":"org_1","progress":{"percent":42.5,"etaMs":9000,"updatedAt":5000},"timing":{"createdAt":1000,"startedAt":2000}}',
    );
    expect(JSON.stringify(jobProgressPayload({ orgId: "org_1", jobId: "job_1", percent: null, etaMs: null, updatedAt: 5000 }))).toBe(
      '{"event":"job.progress","jobId":"job_1","orgId":"org_1","progress":{"percent":null,"etaMs":null,"updatedAt":5000},"timing":{"createdAt":null,"startedAt":null}}',
    );
  });

  it("webhook.test names the org and says what it is", () => {
    expect(JSON.stringify(webhookTestPayload("org_1", 7000))).toBe('{"event":"webhook.test","orgId":"org_1","message":"This is a test event from Renderbus","timing":{"createdAt":7000}}');
  });
});
