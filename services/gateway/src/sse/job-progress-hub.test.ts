import { afterEach, describe, expect, it } from "vitest";
import { JobProgressHub } from "./job-progress-hub.js";

type Handler = (data: unknown, subject: string) => void;

/** A bus that delivers what the test publishes to the hub's subscriptions (subjects matched by their prefix). */
function fakeBus() {
  const handlers: Array<{ pattern: string; handler: Handler }> = [];
  return {
    patterns: () => handlers.map((h) => h.pattern),
    listen: <T>(pattern: string, handler: (data: T, subject: string) => void) => {
      handlers.push({ pattern, handler: handler as Handler });
      return () => undefined;
    },
    publish(subject: string, data: unknown) {
      for (const { pattern, handler } of handlers) if (subject.startsWith(pattern.split("*")[0]!)) handler(data, subject);
    },
  };
}

const hubs: JobProgressHub[] = [];
afterEach(() => hubs.splice(0).forEach((hub) => hub.close()));

function setup(options: { ttlMs?: number; maxJobs?: number } = {}) {
  let now = 1_000;
  const bus = fakeBus();
  const hub = new JobProgressHub(bus, { ...options, now: () => now });
  hubs.push(hub);
  return { bus, hub, advance: (ms: number) => (now += ms) };
}

const tick = (orgId: string, jobId: string, percent: number | null = 42) => ({ orgId, jobId, percent, etaMs: 1000, updatedAt: 5 });

describe("JobProgressHub", () => {
  it("keeps each job's last tick for its own org only, and tells the job's watchers", () => {
    const { bus, hub } = setup();
    const seen: unknown[] = [];
    hub.watch("job_1", (progress) => seen.push(progress));
    bus.publish("jobs.progress.org_a.job_1", tick("org_a", "job_1", 10));
    bus.publish("jobs.progress.org_a.job_1", tick("org_a", "job_1", 20));
    expect(hub.get("org_a", "job_1")).toEqual({ percent: 20, etaMs: 1000, updatedAt: 5 });
    expect(hub.get("org_b", "job_1")).toBeNull();
    expect(seen).toHaveLength(2);
  });

  it("ignores malformed messages and bodies that disagree with their subject", () => {
    const { bus, hub } = setup();
    bus.publish("jobs.progress.org_a.job_1", { ...tick("org_a", "job_1"), percent: 101 });
    bus.publish("jobs.progress.org_a.job_1", { ...tick("org_a", "job_1"), etaMs: -1 });
    bus.publish("jobs.progress.org_a.job_1", "not json object");
    bus.publish("jobs.progress.org_a.job_1", tick("org_b", "job_1"));
    expect(hub.get("org_a", "job_1")).toBeNull();
    expect(hub.get("org_b", "job_1")).toBeNull();
  });

  it("forgets a job when it ends, when its ticks stop for the TTL, and the oldest past the cap", () => {
    const { bus, hub, advance } = setup({ ttlMs: 1_000, maxJobs: 2 });
    bus.publish("jobs.progress.org_a.job_1", tick("org_a", "job_1"));
    bus.publish("jobs.events.job.completed", { jobId: "job_1" });
    expect(hub.get("org_a", "job_1")).toBeNull();
    bus.publish("jobs.progress.org_a.job_2", tick("org_a", "job_2"));
    advance(1_001);
    expect(hub.get("org_a", "job_2")).toBeNull();
    for (const id of ["job_3", "job_4", "job_5"]) bus.publish(`jobs.progress.org_a.${id}`, tick("org_a", id));
    expect(hub.size).toBe(2);
    expect(hub.get("org_a", "job_3")).toBeNull();
    expect(hub.get("org_a", "job_5")).not.toBeNull();
  });

  it("listens to the terminal job events only, not to every job event of every org", () => {
    const { bus, hub } = setup();
    expect(bus.patterns().filter((p) => p.startsWith("jobs.events.")).sort()).toEqual(["jobs.events.job.cancelled", "jobs.events.job.completed", "jobs.events.job.failed"]);
    bus.publish("jobs.progress.org_a.job_1", tick("org_a", "job_1"));
    bus.publish("jobs.events.job.running", { jobId: "job_1" });
    expect(hub.get("org_a", "job_1")).not.toBeNull();
    bus.publish("jobs.events.job.failed", { jobId: "job_1" });
    expect(hub.get("org_a", "job_1")).toBeNull();
  });
});
