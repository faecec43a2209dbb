import { describe, expect, it } from "vitest";
import { DEFAULT_PLANS } from "@renderbus/plans";
import type { jobs } from "@renderbus/contracts";
import type { GatewayDeps } from "../deps.js";
import { presentBatch, presentJob } from "../present/present.js";
import { MIN_TASK_POLL_INTERVAL_MS, pollIntervalOf, taskOfBatch, taskOfJob } from "./mcp-tasks.js";

const job = (status: string, extra: Partial<jobs.Job> = {}) =>
  presentJob({
    id: "job_1",
    orgId: "org_1",
    type: "transcode",
    status,
    inputs: {},
    params: {},
    metadata: {},
    webhookDeliveries: [],
    timing: { createdAt: 1_000, dispatchedAt: 2_000, startedAt: 3_000 },
    ...extra,
  } as unknown as jobs.Job);

const batch = (status: string, counts: Partial<Record<"waiting" | "running" | "completed" | "failed" | "cancelled", number>>) =>
  presentBatch({
    id: "batch_1",
    orgId: "org_1",
    jobCount: 3,
    jobIds: ["job_1", "job_2", "job_3"],
    status,
    counts: { waiting: 0, dispatched: 0, running: 0, completed: 0, failed: 0, cancelled: 0, ...counts },
    createdAt: 1_000,
    ...(status === "completed" ? { completedAt: 9_000 } : {}),
  } as unknown as jobs.Batch);

describe("MCP tasks are jobs and batches", () => {
  it("maps job statuses to task statuses, with the job's error as the failed task's message", () => {
    for (const status of ["waiting", "dispatched", "running"]) expect(taskOfJob(job(status)).status).toBe("working");
    expect(taskOfJob(job("completed", { timing: { createdAt: 1_000, completedAt: 5_000 } } as Partial<jobs.Job>))).toMatchObject({
      taskId: "job_1",
      status: "completed",
      createdAt: new Date(1_000).toISOString(),
      lastUpdatedAt: new Date(5_000).toISOString(),
      ttl: null,
    });
    expect(taskOfJob(job("cancelled")).status).toBe("cancelled");
    const failed = taskOfJob(job("failed", { error: { code: "PROVIDER_ERROR", message: "ffmpeg exited with 1" } } as Partial<jobs.Job>));
    expect(failed).toMatchObject({ status: "failed", statusMessage: "PROVIDER_ERROR: ffmpeg exited with 1" });
    expect(failed).not.toHaveProperty("pollInterval");
  });

  it("suggests a poll interval only while working, and says the progress when the job has one", () => {
    const running = { ...job("running"), progress: { percent: 41.6, etaMs: 2_000, updatedAt: 4_000 } };
    expect(taskOfJob(running, 6_000)).toMatchObject({ status: "working", statusMessage: "Job running, 42%", pollInterval: 6_000, lastUpdatedAt: new Date(4_000).toISOString() });
  });

  it("maps a batch: working until every job finished, then failed > cancelled > completed", () => {
    expect(taskOfBatch(batch("running", { completed: 1, running: 2 }))).toMatchObject({ status: "working", statusMessage: expect.stringMatching(/^1 of 3 jobs finished/) });
    expect(taskOfBatch(batch("completed", { completed: 3 })).status).toBe("completed");
    expect(taskOfBatch(batch("completed", { completed: 2, cancelled: 1 })).status).toBe("cancelled");
    expect(taskOfBatch(batch("completed", { completed: 1, cancelled: 1, failed: 1 })).status).toBe("failed");
  });

  it("spends at most a third of the plan's requests per minute on polling one task, and never polls faster than 2 s", () => {
    const deps = { plans: DEFAULT_PLANS } as unknown as GatewayDeps;
    const interval = (plan: string) => pollIntervalOf({ auth: { plan } as never, deps });
    expect(interval("free")).toBe(Math.ceil(180_000 / DEFAULT_PLANS.free.requestsPerMinute));
    expect(interval("free")).toBeGreaterThan(interval("pro"));
    expect(interval("scale")).toBeGreaterThanOrEqual(MIN_TASK_POLL_INTERVAL_MS);
    for (const plan of ["free", "starter", "pro", "scale"] as const) expect((60_000 / interval(plan)) * 3).toBeLessThanOrEqual(DEFAULT_PLANS[plan].requestsPerMinute + 0.001);
  });
});
