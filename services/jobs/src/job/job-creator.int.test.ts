import { randomBytes } from "node:crypto";
import type { KyselyPlugin } from "kysely";
import { InMemorySpanExporter } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { readStream } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import { startTracing, withTraceHeaders, type Tracing } from "@renderbus/telemetry";
import { startJobsHarness, type JobsHarness } from "../testing/jobs-harness.js";
import { decide } from "./decide.js";
import { JobCreator, type NewJob } from "./job-creator.js";

let harness: JobsHarness;
let tracing: Tracing;
beforeAll(async () => {
  // W3C propagation registered, so trace headers of a context can be written and read back.
  tracing = await startTracing({ service: "job-creator-test", exporter: new InMemorySpanExporter() });
  harness = await startJobsHarness("jobcreator");
});
afterAll(async () => {
  await harness?.stop();
  await tracing?.shutdown();
});

function newJob(orgId: string, jobId = newId("job")): NewJob {
  const now = Date.now();
  const events = decide(undefined, {
    type: "QueueJob",
    jobId,
    orgId,
    jobType: "extract.metadata",
    inputs: { source: "https://example.com/video.mp4" },
    params: {},
    metadata: {},
    plan: "pro",
    limits: { maxRunSeconds: 600, maxInputBytes: 1024, concurrency: 10 },
    submittedBy: "user_test",
    now,
  });
  return { events, now };
}

/** Counts the statements a Kysely instance sends. */
function countingPlugin(): KyselyPlugin & { count: number } {
  const plugin = {
    count: 0,
    transformQuery: (args: Parameters<KyselyPlugin["transformQuery"]>[0]) => {
      plugin.count += 1;
      return args.node;
    },
    transformResult: async (args: Parameters<KyselyPlugin["transformResult"]>[0]) => args.result,
  };
  return plugin;
}

describe("JobCreator (group commit of new jobs)", () => {
  it("stores jobs submitted at the same moment in fewer statements than jobs, each with its stream, projection and outbox row", async () => {
    const counter = countingPlugin();
    const creator = new JobCreator(harness.service.db.withPlugin(counter));
    const orgId = newId("org");
    const jobs = Array.from({ length: 40 }, () => newJob(orgId));
    const states = await Promise.all(jobs.map((job) => creator.create(job)));

    expect(states.map((state) => state.id)).toEqual(jobs.map((job) => job.events[0]!.data.jobId));
    expect(counter.count).toBeLessThan(jobs.length / 4);
    const db = harness.service.db;
    const views = await db.selectFrom("job_views").select(["id", "status", "version"]).where("org_id", "=", orgId).execute();
    expect(views).toHaveLength(40);
    expect(views.every((view) => view.status === "waiting" && view.version === 1)).toBe(true);
    for (const state of states.slice(0, 3)) expect((await readStream(db, state.id)).map((event) => event.type)).toEqual(["JobQueued"]);
    await harness.settle();
    const published = await db.selectFrom("outbox").select("message_id").execute();
    expect(published).toEqual([]);
  });

  it("fails only the job whose row cannot be stored; the others of its group are stored", async () => {
    const creator = new JobCreator(harness.service.db);
    const orgId = newId("org");
    const taken = newId("job");
    await creator.create(newJob(orgId, taken));
    const group = [newJob(orgId), newJob(orgId, taken), newJob(orgId)];
    const outcomes = await Promise.allSettled(group.map((job) => creator.create(job)));

    expect(outcomes.map((outcome) => outcome.status)).toEqual(["fulfilled", "rejected", "fulfilled"]);
    const ids = (await harness.service.db.selectFrom("job_views").select("id").where("org_id", "=", orgId).execute()).map((row) => row.id).sort();
    expect(ids).toEqual([taken, group[0]!.events[0]!.data.jobId, group[2]!.events[0]!.data.jobId].sort());
  });

  it("stores each job with its own request's trace, though one statement writes the group", async () => {
    const creator = new JobCreator(harness.service.db);
    const orgId = newId("org");
    const traceIds = [1, 2, 3].map(() => randomBytes(16).toString("hex"));
    const states = await Promise.all(
      traceIds.map((traceId) => withTraceHeaders({ traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01` }, () => creator.create(newJob(orgId)))),
    );
    const db = harness.service.db;
    for (const [index, state] of states.entries()) {
      const [event] = await readStream(db, state.id);
      expect(event!.metadata.traceparent).toContain(traceIds[index]);
    }
    const outbox = await db.selectFrom("outbox").select(["body", "headers"]).execute();
    for (const [index, state] of states.entries()) {
      const row = outbox.find((candidate) => (candidate.body as { jobId?: string }).jobId === state.id);
      if (row) expect(row.headers.traceparent).toContain(traceIds[index]);
    }
  });
});
