import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Bus } from "@renderbus/bus";
import type { auth, jobs, jobEvents } from "@renderbus/contracts";
import { conflict } from "@renderbus/errors";
import type { AsyncService } from "@renderbus/rpc";
import { createLogger } from "@renderbus/telemetry";
import { testInfra, testNamespace } from "@renderbus/testing";
import { workerConfigSchema } from "../config.js";
import { startWorkerService, type WorkerService } from "../service.js";
import { isAlive } from "../testing/processes.js";
import { notPartOfThisTest as unused, startStandIns, type StandIns } from "../testing/stand-in-services.js";
import { createTestMedia, serveFiles } from "../testing/test-media.js";

/** Jobs the stand-in jobs service treats as cancelled: HoldJob and StartJob answer CONFLICT, as the real one does. */
const cancelled = new Set<string>();
const started = new Set<string>();
const held = new Set<string>();
const reports: string[] = [];

const jobsService: AsyncService<jobs.JobsServer> = {
  submitJob: unused, getJob: unused, listJobs: unused, cancelJob: unused, submitBatch: unused, getBatch: unused, listBatches: unused, listJobTypes: unused,
  async holdJob(request) {
    if (cancelled.has(request.jobId)) throw conflict("Job is cancelled");
    held.add(request.jobId);
    return {};
  },
  async startJob(request) {
    if (cancelled.has(request.jobId)) throw conflict("Job is cancelled and cannot start");
    started.add(request.jobId);
    return { job: undefined };
  },
  async completeJob(request) {
    if (cancelled.has(request.jobId)) throw conflict("Job is cancelled");
    reports.push(`completed ${request.jobId}`);
    return { job: undefined };
  },
  async failJob(request) {
    reports.push(`failed ${request.jobId}`);
    return { job: undefined };
  },
};
const billingService: AsyncService<auth.BillingServer> = {
  getBalance: unused, listUsage: unused, checkBalance: unused,
  async reserveCredits(request) {
    return { orgId: request.orgId, credits: 100, reserved: request.credits };
  },
};

let standIns: StandIns;
let bus: Bus;
let worker: WorkerService;
let mediaDir: string;
let files: { url: string; close(): Promise<void> };
const spawned = new Map<string, number>();

beforeAll(async () => {
  const { natsUrl } = testInfra();
  const namespace = testNamespace("jobholder");
  mediaDir = await mkdtemp(path.join(tmpdir(), "rb-job-holder-"));
  await createTestMedia(mediaDir);
  files = await serveFiles(mediaDir);
  standIns = await startStandIns({ jobs: jobsService, billing: billingService });
  const config = workerConfigSchema.parse({
    MODE: "test",
    ALLOW_PRIVATE_ADDRESSES: "true",
    NATS_URL: natsUrl,
    NATS_NAMESPACE: namespace,
    ...standIns.addresses,
    OUTPUT_DIR: mediaDir,
    OUTPUT_SIGNING_SECRET: "job-holder-test-secret",
    PUBLIC_URL: "http://gateway.test",
    WORKER_CONCURRENCY: "1",
  });
  worker = await startWorkerService(config, {
    logger: createLogger({ service: "worker-test", level: "silent" }),
    onProviderSpawn: (jobId, pid) => spawned.set(jobId, pid),
  });
  bus = await Bus.connect({ url: natsUrl, name: "job-holder-test", namespace });
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await bus?.close();
  await standIns?.stop();
  await files?.close();
  if (mediaDir) await rm(mediaDir, { recursive: true, force: true });
});

async function until<T>(find: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

/** An input server that answers with headers, then a byte a second, never finishing; which downloads it saw end. */
async function startTricklingServer(): Promise<{ url: string; closed: Set<string>; close(): Promise<void> }> {
  const closed = new Set<string>();
  const server: Server = createServer((request, response) => {
    response.writeHead(200, { "content-type": "video/mp4", "content-length": String(10 * 1024 * 1024) });
    const timer = setInterval(() => response.write("x"), 1000);
    response.on("close", () => {
      clearInterval(timer);
      closed.add(request.url ?? "/");
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}`,
    closed,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

describe("cancel without the job.cancelled message (SECURITY-AUDIT finding 14, cancel part)", () => {
  it("stops the provider of a running job within 2 s of its cancel though no cancel event ever reaches the worker", async () => {
    const jobId = `job_cancelpoll_${Date.now()}`;
    const dispatch: jobEvents.JobDispatch = {
      jobId,
      orgId: "org_test",
      type: "transcode",
      inputs: { source: `${files.url}/files/long.mp4` },
      params: { codec: "h265", preset: "veryslow" },
      limits: { maxRunSeconds: 120, maxInputBytes: 100 * 1024 * 1024, concurrency: 1 },
      createdAt: Date.now(),
    };
    await bus.publish("jobs.dispatch.transcode", dispatch, { msgId: `dispatch-${jobId}` });
    await until(() => (started.has(jobId) ? true : undefined));
    const pid = await until(() => spawned.get(jobId));
    // Past a couple of polls while the job is still runnable: polling alone stops nothing.
    await new Promise((resolve) => setTimeout(resolve, 2500));
    expect(isAlive(pid)).toBe(true);

    // Cancelled in the jobs service only: nothing is published on NATS, as when the worker missed the message.
    cancelled.add(jobId);
    const cancelledAt = Date.now();
    while (isAlive(pid) && Date.now() - cancelledAt < 4000) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(isAlive(pid)).toBe(false);
    expect(Date.now() - cancelledAt).toBeLessThan(2000);
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(reports).toEqual([]);
  });

  it("stops the download of a job still being prepared (not started) once its hold answers CONFLICT", async () => {
    const trickle = await startTricklingServer();
    try {
      const jobId = `job_jobholder_prep_${Date.now()}`;
      const dispatch: jobEvents.JobDispatch = {
        jobId,
        orgId: "org_test",
        type: "extract.metadata",
        inputs: { source: `${trickle.url}/${jobId}` },
        params: {},
        limits: { maxRunSeconds: 120, maxInputBytes: 100 * 1024 * 1024, concurrency: 1 },
        createdAt: Date.now(),
      };
      await bus.publish("jobs.dispatch.extract.metadata", dispatch, { msgId: `dispatch-${jobId}` });
      // Held while it downloads, before any StartJob.
      await until(() => (held.has(jobId) ? true : undefined));
      expect(started.has(jobId)).toBe(false);
      expect(trickle.closed.has(`/${jobId}`)).toBe(false);

      cancelled.add(jobId);
      await until(() => (trickle.closed.has(`/${jobId}`) ? true : undefined), 5000);
      expect(started.has(jobId)).toBe(false);
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(reports).toEqual([]);
    } finally {
      await trickle.close();
    }
  });
});
