import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { outcomeOf } from "@renderbus/testing";
import { metadataJob, startJobsHarness, testAuth, type JobsHarness } from "../testing/jobs-harness.js";

const codeOf = (promise: Promise<unknown>) => outcomeOf(promise, { message: true });

let harness: JobsHarness;
beforeAll(async () => {
  harness = await startJobsHarness("listjobs");
});
afterAll(async () => harness?.stop());

describe("ListJobs", () => {
  it("walks every page with no duplicates and no misses while new jobs keep arriving", async () => {
    const auth = testAuth("pro");
    const existing = new Set<string>();
    for (let index = 0; index < 45; index += 1) existing.add((await harness.client.submitJob({ job: metadataJob() }, { auth })).job!.id);

    const seen: string[] = [];
    let cursor: string | undefined;
    let pages = 0;
    do {
      const page = await harness.client.listJobs({ limit: 7, ...(cursor ? { cursor } : {}) }, { auth });
      seen.push(...page.jobs.map((job) => job.id));
      // Two new jobs land between every page.
      await Promise.all([0, 1].map(() => harness.client.submitJob({ job: metadataJob() }, { auth })));
      cursor = page.nextCursor;
      pages += 1;
    } while (cursor);

    expect(new Set(seen).size).toBe(seen.length);
    for (const id of existing) expect(seen).toContain(id);
    expect(pages).toBeGreaterThanOrEqual(7);
  });

  it("lists newest first and filters by status, type, batch and creation time", async () => {
    const auth = testAuth("free");
    const ids: string[] = [];
    for (let index = 0; index < 4; index += 1) ids.push((await harness.client.submitJob({ job: metadataJob() }, { auth })).job!.id);
    const qr = (await harness.client.submitJob({ job: { type: "qr.generate", inputs: {}, params: { content: "hi" }, metadata: {} } }, { auth })).job!;
    await harness.settle();

    const all = await harness.client.listJobs({ limit: 0 }, { auth });
    expect(all.jobs.map((job) => job.id)).toEqual([qr.id, ...[...ids].reverse()]);
    expect(all.nextCursor).toBeUndefined();

    expect((await harness.client.listJobs({ limit: 10, status: "waiting" }, { auth })).jobs.map((job) => job.id).sort()).toEqual([ids[2], ids[3], qr.id].sort());
    expect((await harness.client.listJobs({ limit: 10, type: "qr.generate" }, { auth })).jobs.map((job) => job.id)).toEqual([qr.id]);
    const middle = all.jobs[2]!.timing!.createdAt;
    const before = await harness.client.listJobs({ limit: 10, createdBefore: middle }, { auth });
    expect(before.jobs.every((job) => job.timing!.createdAt < middle)).toBe(true);
    const after = await harness.client.listJobs({ limit: 10, createdAfter: middle }, { auth });
    expect(after.jobs.every((job) => job.timing!.createdAt > middle)).toBe(true);
  });

  it("returns 400 VALIDATION_ERROR for a limit outside 1-100, an unknown status or a malformed cursor", async () => {
    const auth = testAuth("pro");
    expect(await codeOf(harness.client.listJobs({ limit: 101 }, { auth }))).toMatch(/^VALIDATION_ERROR: limit/);
    expect(await codeOf(harness.client.listJobs({ limit: -1 }, { auth }))).toMatch(/^VALIDATION_ERROR: limit/);
    expect(await codeOf(harness.client.listJobs({ limit: 10, status: "done" }, { auth }))).toMatch(/^VALIDATION_ERROR: status/);
    expect(await codeOf(harness.client.listJobs({ limit: 10, cursor: "not-a-cursor" }, { auth }))).toMatch(/^VALIDATION_ERROR: cursor/);
  });
});
