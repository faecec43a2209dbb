import { describe, expect, it } from "vitest";
// The dispatcher builds the bodies it signs with these; the stream must produce the same bytes.
import { batchCompletedPayload, jobCompletedPayload, jobFailedPayload, jobRunningPayload, webhookTestPayload } from "@renderbus/webhook-payloads";
import { batchCompletedWebhook, testWebhook, testWebhooksOf, webhookForJobEvent } from "./webhook-events.js";

const timing = { createdAt: 1_000, dispatchedAt: 1_100, startedAt: 1_200, completedAt: 3_000 };

describe("webhook event stream payloads", () => {
  it("are byte for byte the bodies the dispatcher signs for job.running, job.completed and job.failed", () => {
    const started = { jobId: "job_1", orgId: "org_1", type: "transcode", createdAt: 1_000, startedAt: 1_200, workerId: "w1" };
    expect(webhookForJobEvent("jobs.events.job.running", started)).toEqual({ id: "job.running:job_1", event: "job.running", body: JSON.stringify(jobRunningPayload(started)) });

    const completed = {
      jobId: "job_1",
      orgId: "org_1",
      result: { url: "https://x/out.mp4", metadata: { durationMs: 2_000, width: 320, height: 240 }, outputKey: "k", contentType: "video/mp4" },
      cost: { credits: 1, breakdown: "2s video @720p" },
      timing,
    };
    expect(webhookForJobEvent("jobs.events.job.completed", completed)?.body).toBe(JSON.stringify(jobCompletedPayload(completed)));

    const failed = { jobId: "job_2", orgId: "org_1", error: { code: "INPUT_ERROR", message: "unreachable" }, timing: { createdAt: 1_000 } };
    expect(webhookForJobEvent("jobs.events.job.failed", failed)?.body).toBe(JSON.stringify(jobFailedPayload(failed)));
  });

  it("sends nothing for events without a webhook (queued, dispatched, cancelled)", () => {
    for (const subject of ["jobs.events.job.queued", "jobs.events.job.dispatched", "jobs.events.job.cancelled"]) {
      expect(webhookForJobEvent(subject, { jobId: "job_1", orgId: "org_1" })).toBeUndefined();
    }
  });

  it("builds batch.completed and webhook.test as the dispatcher does", () => {
    const batch = { batchId: "batch_1", orgId: "org_1", jobCount: 3, completed: 2, failed: 1, cancelled: 0, createdAt: 1_000, completedAt: 5_000 };
    expect(batchCompletedWebhook(batch).body).toBe(
      JSON.stringify(batchCompletedPayload({ batchId: "batch_1", jobCount: 3, counts: { completed: 2, failed: 1, cancelled: 0 }, createdAt: 1_000, completedAt: 5_000 })),
    );
    const created = { deliveryId: "del_1", orgId: "org_1", event: "webhook.test", status: "pending", attempts: 0, occurredAt: 7_000 };
    expect(testWebhook(created)).toEqual({ id: "del_1", event: "webhook.test", body: JSON.stringify(webhookTestPayload("org_1", 7_000)) });
    expect(testWebhook({ ...created, status: "succeeded", attempts: 1 })).toBeUndefined();
    expect(testWebhook({ ...created, event: "job.completed" })).toBeUndefined();
  });

  it("takes from a DeliveriesUpdated only the org's own test deliveries, though the batch mixes orgs", () => {
    const test = (deliveryId: string, orgId: string) => ({ deliveryId, orgId, event: "webhook.test", status: "pending", attempts: 0, occurredAt: 7_000, trace: {} });
    const batch = { updates: [test("del_a1", "org_a"), test("del_b1", "org_b"), { ...test("del_a2", "org_a"), event: "job.completed" }, test("del_a3", "org_a")] };
    expect(testWebhooksOf(batch, "org_a").map((webhook) => webhook.id)).toEqual(["del_a1", "del_a3"]);
    expect(testWebhooksOf(batch, "org_b")).toEqual([{ id: "del_b1", event: "webhook.test", body: JSON.stringify(webhookTestPayload("org_b", 7_000)) }]);
    expect(testWebhooksOf(batch, "org_c")).toEqual([]);
    expect(testWebhooksOf({ updates: [{ ...test("del_x", ""), orgId: "" }] }, undefined)).toEqual([]);
  });
});
