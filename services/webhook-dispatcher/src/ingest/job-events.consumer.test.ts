import { describe, expect, it } from "vitest";
import type { jobEvents } from "@renderbus/contracts";
import { jobCompletedPayload, jobFailedPayload } from "@renderbus/webhook-payloads";
import { workOfJobEvent } from "./job-events.consumer.js";

const timing = { createdAt: 1000, dispatchedAt: 1100, startedAt: 1200, completedAt: 1300 };
const completed = {
  jobId: "job_1",
  orgId: "org_1",
  batchId: "batch_1",
  result: { url: "https://files.example/job_1.mp4", metadata: {}, outputKey: "job_1.mp4", contentType: "video/mp4" },
  cost: { credits: 2, breakdown: "10s video" },
  timing,
} as unknown as jobEvents.JobCompleted;

describe("what a job event asks of the dispatcher", () => {
  it("owes a job.completed webhook, dated by the job's completion, and counts toward the job's batch", () => {
    expect(workOfJobEvent("jobs.events.job.completed", completed)).toEqual({
      orgId: "org_1",
      webhook: { event: "job.completed", jobId: "job_1", body: jobCompletedPayload(completed), eventAt: 1300 },
      terminal: { batchId: "batch_1", jobId: "job_1", outcome: "completed" },
    });
  });

  it("owes a job.failed webhook and no batch bookkeeping for a job outside a batch", () => {
    const failed = { jobId: "job_2", orgId: "org_1", error: { code: "PROVIDER_TIMEOUT", message: "too long" }, timing } as unknown as jobEvents.JobFailed;
    expect(workOfJobEvent("jobs.events.job.failed", failed)).toEqual({
      orgId: "org_1",
      webhook: { event: "job.failed", jobId: "job_2", body: jobFailedPayload(failed), eventAt: 1300 },
    });
  });

  it("sends no webhook for a cancelled job, which still counts toward its batch", () => {
    expect(workOfJobEvent("jobs.events.job.cancelled", { jobId: "job_3", orgId: "org_1", batchId: "batch_1" })).toEqual({
      orgId: "org_1",
      terminal: { batchId: "batch_1", jobId: "job_3", outcome: "cancelled" },
    });
  });

  it("records a created batch with its job count", () => {
    expect(workOfJobEvent("jobs.events.batch.created", { batchId: "batch_1", orgId: "org_1", jobIds: ["job_1", "job_2"], createdAt: 900 })).toEqual({
      orgId: "org_1",
      batchCreated: { batchId: "batch_1", jobCount: 2, createdAt: 900 },
    });
  });

  it("ignores events that owe nothing (queued, dispatched)", () => {
    expect(workOfJobEvent("jobs.events.job.queued", { jobId: "job_1", orgId: "org_1" })).toBeUndefined();
    expect(workOfJobEvent("jobs.events.job.dispatched", { jobId: "job_1", orgId: "org_1" })).toBeUndefined();
  });
});
