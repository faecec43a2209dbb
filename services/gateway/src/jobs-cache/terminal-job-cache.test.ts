import { describe, expect, it } from "vitest";
import type { jobs } from "@renderbus/contracts";
import { TerminalJobCache } from "./terminal-job-cache.js";

const job = (id: string, status: string, orgId = "org_a"): jobs.Job => ({ id, orgId, status, type: "thumbnail", webhookDeliveries: [] }) as unknown as jobs.Job;

describe("the gateway's cache of finished jobs", () => {
  it("answers a finished job from memory after the first read, and never caches an unfinished one", async () => {
    let now = 0;
    const cache = new TerminalJobCache({ ttlMs: 2_000, now: () => now });
    let calls = 0;
    const read = (found: jobs.Job) => cache.read("org_a", found.id, async () => (calls++, found));
    await read(job("job_1", "running"));
    await read(job("job_1", "running"));
    expect(calls).toBe(2);
    for (const status of ["completed", "failed", "cancelled"]) {
      calls = 0;
      const finished = job(`job_${status}`, status);
      await read(finished);
      expect(await read(finished)).toBe(finished);
      expect(calls).toBe(1);
    }
    now = 2_000;
    calls = 0;
    await read(job("job_completed", "completed"));
    expect(calls).toBe(1); // expired: asked again
  });

  it("lets the pollers of a finished job whose entry ran out share one read of it, and no read a delivery update may have overtaken", async () => {
    let now = 0;
    const cache = new TerminalJobCache({ ttlMs: 2_000, now: () => now });
    const reads: Array<(job: jobs.Job) => void> = [];
    const fetch = () => new Promise<jobs.Job>((resolve) => reads.push(resolve));
    const poll = () => cache.read("org_a", "job_1", fetch);
    const first = poll();
    reads[0]!(job("job_1", "completed"));
    await first;
    now = 2_000; // the entry ran out: ten pollers at once
    const pollers = Array.from({ length: 10 }, poll);
    expect(reads).toHaveLength(2);
    const refreshed = job("job_1", "completed");
    reads[1]!(refreshed);
    expect(await Promise.all(pollers)).toEqual(Array(10).fill(refreshed));
    expect(await poll()).toBe(refreshed); // cached again

    now = 4_000;
    const before = poll();
    expect(reads).toHaveLength(3);
    cache.forget("job_1"); // a delivery of the job moved while that read was under way
    const after = poll();
    expect(reads).toHaveLength(4); // its own read, not the older one
    reads[2]!(job("job_1", "completed"));
    reads[3]!(job("job_1", "completed"));
    await Promise.all([before, after]);
  });

  it("forgets every finished job after its replica's NATS connection came back, and caches none for one TTL", async () => {
    let now = 0;
    const cache = new TerminalJobCache({ ttlMs: 2_000, now: () => now });
    let calls = 0;
    const read = (id: string) => cache.read("org_a", id, async () => (calls++, job(id, "completed")));
    await read("job_1");
    await read("job_2");
    await read("job_1");
    expect(calls).toBe(2);
    now = 500;
    cache.forgetAll(); // delivery updates published while the connection was down were never received
    expect(cache.size).toBe(0);
    await read("job_1");
    await read("job_1");
    expect(calls).toBe(4); // the jobs service may not have projected the missed updates yet: not cached
    now = 2_500;
    await read("job_1");
    await read("job_1");
    expect(calls).toBe(5); // cached again after one TTL
  });

  it("never shares a read of a job it has not seen finished, nor another org's", async () => {
    let now = 0;
    const cache = new TerminalJobCache({ ttlMs: 2_000, now: () => now });
    let calls = 0;
    const fetch = (status: string, orgId = "org_a") => async () => (calls++, job("job_1", status, orgId));
    await Promise.all([cache.read("org_a", "job_1", fetch("running")), cache.read("org_a", "job_1", fetch("running"))]);
    expect(calls).toBe(2); // a read after a write (a cancel) must see it: unfinished jobs are read each time
    await cache.read("org_a", "job_1", fetch("completed"));
    now = 2_000;
    calls = 0;
    await Promise.all([cache.read("org_a", "job_1", fetch("completed")), cache.read("org_b", "job_1", fetch("completed", "org_b"))]);
    expect(calls).toBe(2);
  });

  it("never serves one org's job to another org", async () => {
    const cache = new TerminalJobCache({ ttlMs: 60_000 });
    cache.remember(job("job_x", "completed", "org_a"));
    expect(cache.get("org_b", "job_x")).toBeUndefined();
    expect(cache.get("org_a", "job_x")?.id).toBe("job_x");
  });

  it("drops a job when its delivery log moves and does not cache it again until the jobs service has caught up", () => {
    let now = 0;
    const cache = new TerminalJobCache({ ttlMs: 2_000, now: () => now });
    cache.remember(job("job_1", "completed"));
    cache.forget("job_1");
    expect(cache.get("org_a", "job_1")).toBeUndefined();
    cache.remember(job("job_1", "completed")); // possibly read before the projection: not kept
    expect(cache.get("org_a", "job_1")).toBeUndefined();
    now = 2_000;
    cache.remember(job("job_1", "completed"));
    expect(cache.get("org_a", "job_1")).toBeDefined();
  });

  it("is off with a TTL of 0, and stays bounded", () => {
    const cache = new TerminalJobCache({ ttlMs: 60_000, maxEntries: 3 });
    for (const id of ["job_1", "job_2", "job_3", "job_4"]) cache.remember(job(id, "completed"));
    expect(cache.size).toBe(3);
    expect(cache.get("org_a", "job_1")).toBeUndefined();
    expect(cache.get("org_a", "job_4")).toBeDefined();
    const off = new TerminalJobCache({ ttlMs: 0 });
    off.remember(job("job_1", "completed"));
    expect(off.size).toBe(0);
  });
});
