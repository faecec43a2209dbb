import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { jobEvents, jobs } from "@renderbus/contracts";
import type { AuthContext } from "@renderbus/rpc";
import { metadataJob, startJobsHarness, STREAMS, testAuth, type JobsHarness } from "../testing/jobs-harness.js";

let harness: JobsHarness;
beforeAll(async () => {
  // Two replicas on one database: their scheduling passes must not over-dispatch between them.
  harness = await startJobsHarness("scheduler", { replicas: 2 });
});
afterAll(async () => harness?.stop());

async function jobsOf(auth: AuthContext): Promise<jobs.Job[]> {
  return (await harness.client.listJobs({ limit: 100 }, { auth })).jobs;
}

/**
 * The most jobs of the org that held a slot at once, replaying its events in global position order (a dispatch is
 * only decided after the terminal event that freed its slot was committed, so position order is causal here).
 */
async function peakActive(orgId: string): Promise<number> {
  const events = await harness.service.db
    .selectFrom("events")
    .select(["type", "stream_id"])
    .where("stream_id", "in", harness.service.db.selectFrom("job_views").select("id").where("org_id", "=", orgId))
    .orderBy("global_position")
    .execute();
  const active = new Set<string>();
  let peak = 0;
  for (const event of events) {
    if (event.type === "JobDispatched") active.add(event.stream_id);
    if (["JobCompleted", "JobFailed", "JobCancelled"].includes(event.type)) active.delete(event.stream_id);
    peak = Math.max(peak, active.size);
  }
  return peak;
}

const countBy = (list: jobs.Job[], ...statuses: string[]) => list.filter((job) => statuses.includes(job.status)).length;

describe("scheduler", () => {
  it("keeps a free org's 6 jobs at most 2 dispatched/running, starts the rest in submission order, and finishes all 6", async () => {
    const work = await harness.collect<jobEvents.JobDispatch>(STREAMS.jobDispatch, "jobs.dispatch.>");
    const auth = testAuth("free");
    const clients = [harness.client, harness.replicaClient!];
    // Submitted one after the other, alternating replicas, so submission order is well defined.
    const submitted: jobs.SubmitJobResponse[] = [];
    for (let index = 0; index < 6; index += 1) {
      submitted.push(await clients[index % 2]!.submitJob({ job: metadataJob(`https://x.test/${index}.mp4`) }, { auth }));
    }
    await harness.settle();
    let current = await jobsOf(auth);
    expect(countBy(current, "dispatched", "running")).toBe(2);
    expect(countBy(current, "waiting")).toBe(4);

    const creationOrder = [...current].sort((a, b) => a.timing!.createdAt - b.timing!.createdAt || (a.id < b.id ? -1 : 1)).map((job) => job.id);
    const dispatchOrder: string[] = [];
    let completedCount = 0;
    while (completedCount < 6) {
      const active = current.filter((job) => job.status === "dispatched" || job.status === "running");
      expect(active.length).toBeLessThanOrEqual(2);
      expect(active.length).toBeGreaterThan(0);
      const byDispatch = [...active].sort((a, b) => a.timing!.dispatchedAt! - b.timing!.dispatchedAt! || a.timing!.createdAt - b.timing!.createdAt || (a.id < b.id ? -1 : 1));
      for (const job of byDispatch) if (!dispatchOrder.includes(job.id)) dispatchOrder.push(job.id);
      const next = active.sort((a, b) => a.timing!.dispatchedAt! - b.timing!.dispatchedAt!)[0]!;
      if (next.status === "dispatched") await clients[completedCount % 2]!.startJob({ jobId: next.id, workerId: "w1" });
      await clients[(completedCount + 1) % 2]!.completeJob({
        jobId: next.id,
        result: { url: "", metadata: {}, outputKey: `out/${next.id}.json`, contentType: "application/json" },
        cost: { credits: 1, breakdown: "metadata" },
      });
      completedCount += 1;
      await harness.settle();
      current = await jobsOf(auth);
      expect(countBy(current, "completed")).toBe(completedCount);
      expect(countBy(current, "dispatched", "running")).toBe(Math.min(2, 6 - completedCount));
    }
    expect(dispatchOrder).toEqual(creationOrder);
    expect(await peakActive(auth.orgId)).toBe(2);
    expect(submitted.map((response) => response.job!.id)).toEqual(creationOrder);

    // One work message per job, each exactly once.
    const messages = await work.waitFor(6, (message) => message.data.orgId === auth.orgId);
    expect(new Set(messages.map((message) => message.data.jobId)).size).toBe(6);
  });

  it("never dispatches more than the limit when 12 jobs arrive at once on two replicas", async () => {
    const auth = testAuth("free");
    const clients = [harness.client, harness.replicaClient!];
    await Promise.all(Array.from({ length: 12 }, (_, index) => clients[index % 2]!.submitJob({ job: metadataJob() }, { auth })));
    await harness.settle();
    const current = await jobsOf(auth);
    expect(countBy(current, "dispatched", "running")).toBe(2);
    expect(countBy(current, "waiting")).toBe(10);
    expect(await peakActive(auth.orgId)).toBe(2);
  });

  it("frees a slot when an active job fails or is cancelled", async () => {
    const auth = testAuth("free");
    const ids: string[] = [];
    for (let index = 0; index < 4; index += 1) ids.push((await harness.client.submitJob({ job: metadataJob() }, { auth })).job!.id);
    await harness.settle();
    await harness.client.failJob({ jobId: ids[0]!, error: { code: "PROVIDER_ERROR", message: "ffmpeg exited with 1" } });
    await harness.settle();
    expect((await harness.client.getJob({ jobId: ids[2]! }, { auth })).status).toBe("dispatched");
    await harness.client.cancelJob({ jobId: ids[1]! }, { auth });
    await harness.settle();
    expect((await harness.client.getJob({ jobId: ids[3]! }, { auth })).status).toBe("dispatched");
  });

  it("applies each org's concurrency on its own", async () => {
    const [free, pro] = [testAuth("free"), testAuth("pro")];
    await Promise.all(Array.from({ length: 4 }, () => harness.client.submitJob({ job: metadataJob() }, { auth: free })));
    await Promise.all(Array.from({ length: 4 }, () => harness.client.submitJob({ job: metadataJob() }, { auth: pro })));
    await harness.settle();
    expect(countBy(await jobsOf(free), "dispatched")).toBe(2);
    expect(countBy(await jobsOf(pro), "dispatched")).toBe(4);
  });
});
