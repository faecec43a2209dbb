import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "kysely";
import { metadataJob, startJobsHarness, testAuth, type JobsHarness } from "../testing/jobs-harness.js";
import { holdJob } from "./job-holds.js";

const JOB_HOLD_TTL_MS = 600;
const JOB_HOLD_MAX_MS = 1500;

let harness: JobsHarness;
beforeAll(async () => {
  harness = await startJobsHarness("watchdog", {
    env: {
      PLANS_JSON: JSON.stringify({ free: { maxRunSeconds: 1 } }),
      JOBS_WATCHDOG_GRACE_MS: "0",
      JOBS_WATCHDOG_INTERVAL_MS: "600000",
      JOB_HOLD_TTL_MS: String(JOB_HOLD_TTL_MS),
      JOB_HOLD_MAX_MS: String(JOB_HOLD_MAX_MS),
    },
  });
});
afterAll(async () => harness?.stop());

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function runningJob(auth: ReturnType<typeof testAuth>): Promise<string> {
  const jobId = (await harness.client.submitJob({ job: metadataJob() }, { auth })).job!.id;
  await harness.settle();
  await harness.client.startJob({ jobId, workerId: "w" });
  return jobId;
}

const holdRows = async () => (await sql<{ job_id: string }>`select job_id from job_holds`.execute(harness.service.db)).rows.map((row) => row.job_id);

describe("job timeout watchdog", () => {
  it("fails a job running past its plan's run time with PROVIDER_TIMEOUT and frees its slot", async () => {
    const auth = testAuth("free");
    const ids: string[] = [];
    for (let index = 0; index < 3; index += 1) ids.push((await harness.client.submitJob({ job: metadataJob() }, { auth })).job!.id);
    await harness.settle();
    await harness.client.startJob({ jobId: ids[0]!, workerId: "w" });
    expect(await harness.service.watchdog.tick()).toBe(0);

    await pause(1100);
    expect(await harness.service.watchdog.tick()).toBe(1);
    await harness.settle();
    expect(await harness.client.getJob({ jobId: ids[0]! }, { auth })).toMatchObject({ status: "failed", error: { code: "PROVIDER_TIMEOUT" } });
    // Dispatched but never started jobs are the worker's to time out, not the watchdog's.
    expect((await harness.client.getJob({ jobId: ids[1]! }, { auth })).status).toBe("dispatched");
    expect((await harness.client.getJob({ jobId: ids[2]! }, { auth })).status).toBe("dispatched");
    for (const jobId of ids.slice(1)) await harness.client.cancelJob({ jobId }, { auth });
  });

  it("keeps a running job its worker still holds (storing a large output) past its run time, and fails it once the holds stop for JOB_HOLD_TTL_MS", async () => {
    const auth = testAuth("free");
    const jobId = await runningJob(auth);
    const holdUntil = Date.now() + 1_000 + 500;
    while (Date.now() < holdUntil) {
      await harness.client.holdJob({ jobId, workerId: "w" });
      await pause(150);
      expect(await harness.service.watchdog.tick()).toBe(0);
    }
    expect((await harness.client.getJob({ jobId }, { auth })).status).toBe("running");

    await pause(JOB_HOLD_TTL_MS + 100);
    expect(await harness.service.watchdog.tick()).toBe(1);
    expect(await harness.client.getJob({ jobId }, { auth })).toMatchObject({ status: "failed", error: { code: "PROVIDER_TIMEOUT" } });
    // The ended job's hold is forgotten by the next pass, and a worker still holding it hears the job has ended.
    await harness.service.watchdog.tick();
    expect(await holdRows()).not.toContain(jobId);
    await expect(harness.client.holdJob({ jobId, workerId: "w" })).rejects.toMatchObject({ code: "CONFLICT" });
    expect(await holdRows()).not.toContain(jobId);
  });

  it("never lets holds keep a running job more than JOB_HOLD_MAX_MS past its run time (a worker hung while holding)", async () => {
    const auth = testAuth("free");
    const jobId = await runningJob(auth);
    const heldFrom = Date.now();
    let failed = 0;
    while (failed === 0) {
      expect(Date.now() - heldFrom, "failed while its holds go on").toBeLessThan(1_000 + JOB_HOLD_MAX_MS + 20_000);
      await harness.client.holdJob({ jobId, workerId: "w" });
      await pause(150);
      failed = await harness.service.watchdog.tick();
    }
    expect(Date.now() - heldFrom).toBeGreaterThan(1_000 + JOB_HOLD_MAX_MS - 500);
    expect(await harness.client.getJob({ jobId }, { auth })).toMatchObject({ status: "failed", error: { code: "PROVIDER_TIMEOUT" } });
  });

  it("answers a hold of a job cancelled meanwhile with CONFLICT (its worker stops preparing it), and of no job with NOT_FOUND", async () => {
    const auth = testAuth("pro");
    const jobId = (await harness.client.submitJob({ job: metadataJob() }, { auth })).job!.id;
    await harness.settle();
    await harness.client.holdJob({ jobId, workerId: "w" });
    expect(await holdRows()).toContain(jobId);
    await harness.client.cancelJob({ jobId }, { auth });
    await expect(harness.client.holdJob({ jobId, workerId: "w" })).rejects.toMatchObject({ code: "CONFLICT" });
    await harness.service.watchdog.tick();
    expect(await holdRows()).not.toContain(jobId);
    await expect(harness.client.holdJob({ jobId: "job_nope", workerId: "w" })).rejects.toMatchObject({ code: "NOT_FOUND" });
  });

  it("writes a hold at most once a sixth of JOB_HOLD_TTL_MS, however often its worker asks (every second, its cancel check)", async () => {
    const auth = testAuth("pro");
    const jobId = await runningJob(auth);
    const heldAt = async () => (await sql<{ held_at: string }>`select held_at from job_holds where job_id = ${jobId}`.execute(harness.service.db)).rows.map((row) => Number(row.held_at));
    const limits = { ttlMs: JOB_HOLD_TTL_MS };
    const t = Date.now();
    await holdJob(harness.service.db, jobId, limits, t);
    expect(await heldAt()).toEqual([t]);
    // Asked again within a sixth of the TTL (100 ms here): the row stays as it was, unwritten.
    await holdJob(harness.service.db, jobId, limits, t + 60);
    await holdJob(harness.service.db, jobId, limits, t + 100);
    expect(await heldAt()).toEqual([t]);
    await holdJob(harness.service.db, jobId, limits, t + 101);
    expect(await heldAt()).toEqual([t + 101]);
    await harness.client.cancelJob({ jobId }, { auth });
  });
});
