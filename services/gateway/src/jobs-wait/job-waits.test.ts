import { afterEach, describe, expect, it } from "vitest";
import type { Bus } from "@renderbus/bus";
import type { jobs } from "@renderbus/contracts";
import type { AuthContext } from "@renderbus/rpc";
import { JobEventHub } from "../sse/job-event-hub.js";
import { TerminalJobCache } from "../jobs-cache/terminal-job-cache.js";
import { JobWaits } from "./job-waits.js";

const HOUR = 3_600_000;
const auth = { orgId: "org_1", userId: "usr_1", plan: "pro" } as AuthContext;

/** A bus that delivers what the test publishes (NATS itself is outside what this tests). */
function fakeBus() {
  const handlers: Array<{ subject: string; handler: (data: unknown, subject: string) => void }> = [];
  const bus = {
    listen: (subject: string, handler: (data: unknown, subject: string) => void) => {
      const entry = { subject, handler };
      handlers.push(entry);
      return () => handlers.splice(handlers.indexOf(entry), 1);
    },
  } as unknown as Bus;
  const publish = (event: string, jobId: string) => {
    for (const { handler } of [...handlers]) handler({ jobId }, `jobs.events.job.${event}`);
  };
  return { bus, publish };
}

/** Jobs whose status the test sets; counts reads. */
function fakeJobs() {
  const statuses = new Map<string, string>();
  let reads = 0;
  const jobOf = (id: string) => ({ id, orgId: "org_1", status: statuses.get(id) ?? "waiting", webhookDeliveries: [] }) as unknown as jobs.Job;
  return {
    statuses,
    reads: () => reads,
    client: {
      getJob: async ({ jobId }: { jobId: string }) => {
        reads++;
        return jobOf(jobId);
      },
      getBatch: async ({ batchId }: { batchId: string }) => {
        reads++;
        const jobIds = ["job_a", "job_b"];
        const done = jobIds.every((id) => ["completed", "failed", "cancelled"].includes(statuses.get(id) ?? ""));
        return { id: batchId, orgId: "org_1", jobIds, jobCount: 2, status: done ? "completed" : "running" } as unknown as jobs.Batch;
      },
    },
  };
}

/** Hubs made by setUp, closed after each test (a hub lingers 30 s on its subscription after its last watcher). */
const hubs: JobEventHub[] = [];
afterEach(() => {
  for (const hub of hubs.splice(0)) hub.close();
});

function setUp() {
  const { bus, publish } = fakeBus();
  const jobEvents = new JobEventHub(bus);
  hubs.push(jobEvents);
  const fake = fakeJobs();
  // Re-reads only on events: a wait that finishes proves it was woken by one (the test's own timeout is the guard).
  const waits = new JobWaits({ jobs: fake.client as never, jobEvents, finishedJobs: new TerminalJobCache({ ttlMs: 0 }) }, { resyncMs: HOUR });
  return { waits, publish, fake, jobEvents };
}

describe("JobWaits", () => {
  it("answers at once for a finished job, without subscribing", async () => {
    const { waits, fake, jobEvents } = setUp();
    fake.statuses.set("job_1", "completed");
    expect((await waits.waitForJob(auth, "job_1", HOUR)).status).toBe("completed");
    expect(fake.reads()).toBe(1);
    expect(jobEvents.watcherCount).toBe(0);
  });

  it("is woken by the job's event and returns the terminal job, then lets go of its listener", async () => {
    const { waits, fake, publish, jobEvents } = setUp();
    const waiting = waits.waitForJob(auth, "job_1", HOUR);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(jobEvents.watcherCount).toBe(1);
    fake.statuses.set("job_1", "running");
    publish("started", "job_1");
    publish("started", "job_other");
    await new Promise((resolve) => setTimeout(resolve, 300));
    fake.statuses.set("job_1", "completed");
    publish("completed", "job_1");
    expect((await waiting).status).toBe("completed");
    expect(jobEvents.watcherCount).toBe(0);
  });

  it("returns the job as it is when the time is up, when the client leaves, and when the gateway closes", async () => {
    const { waits, jobEvents } = setUp();
    expect((await waits.waitForJob(auth, "job_1", 50)).status).toBe("waiting");
    expect((await waits.waitForJob(auth, "job_1", 0)).status).toBe("waiting");

    const client = new AbortController();
    const leaving = waits.waitForJob(auth, "job_1", HOUR, client.signal);
    setTimeout(() => client.abort(), 20);
    expect((await leaving).status).toBe("waiting");

    const closing = waits.waitForJob(auth, "job_1", HOUR);
    setTimeout(() => waits.close(), 20);
    expect((await closing).status).toBe("waiting");
    expect(waits.closed.aborted).toBe(true);
    expect(jobEvents.watcherCount).toBe(0);
    // After close, waits answer at once.
    expect((await waits.waitForJob(auth, "job_1", HOUR)).status).toBe("waiting");
  });

  it("waits for a batch until every job of it is terminal, woken by its jobs' events", async () => {
    const { waits, fake, publish, jobEvents } = setUp();
    const waiting = waits.waitForBatch(auth, "batch_1", HOUR);
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(jobEvents.watcherCount).toBe(2);
    fake.statuses.set("job_a", "completed");
    publish("completed", "job_a");
    await new Promise((resolve) => setTimeout(resolve, 300));
    fake.statuses.set("job_b", "failed");
    publish("failed", "job_b");
    expect((await waiting).status).toBe("completed");
    expect(jobEvents.watcherCount).toBe(0);
  });
});
