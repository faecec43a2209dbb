import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Writable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Bus, STREAMS } from "@renderbus/bus";
import type { auth, jobs, jobEvents } from "@renderbus/contracts";
import { conflict, insufficientCredits } from "@renderbus/errors";
import type { AsyncService } from "@renderbus/rpc";
import { createObjectStore, verifyOutputSignature } from "@renderbus/storage";
import { createLogger } from "@renderbus/telemetry";
import { testInfra, testNamespace, testStorageEnv } from "@renderbus/testing";
import { workerConfigSchema, type WorkerConfig } from "./config.js";
import { startWorkerService, type WorkerService } from "./service.js";
import { isAlive } from "./testing/processes.js";
import { notPartOfThisTest as unused, startStandIns, type StandIns } from "./testing/stand-in-services.js";
import { createTestMedia, serveFiles } from "./testing/test-media.js";

const SECRET = "worker-test-output-secret";

/** Every line the worker logs (warn and above), as text. */
const logLines: string[] = [];
const logDestination = new Writable({
  write(chunk: Buffer, _encoding, callback) {
    logLines.push(...chunk.toString().split("\n").filter(Boolean));
    notify();
    callback();
  },
});
const PUBLIC_URL = "http://gateway.test";

/** What the fake Jobs + Billing services (outside the worker) were told. */
const reports = {
  reserved: [] as auth.ReserveCreditsRequest[],
  started: [] as jobs.StartJobRequest[],
  completed: [] as jobs.CompleteJobRequest[],
  failed: [] as jobs.FailJobRequest[],
};
/** Jobs the fake jobs service treats as cancelled (StartJob answers CONFLICT). */
const cancelledJobs = new Set<string>();
const waiters: Array<() => void> = [];

function notify() {
  for (const waiter of waiters.splice(0)) waiter();
}

async function until<T>(find: () => T | undefined, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const found = find();
    if (found !== undefined) return found;
    if (Date.now() > deadline) throw new Error("timed out waiting for a report");
    await new Promise<void>((resolve) => {
      waiters.push(resolve);
      setTimeout(resolve, 200);
    });
  }
}


const jobsService: AsyncService<jobs.JobsServer> = {
  submitJob: unused, getJob: unused, listJobs: unused, cancelJob: unused, submitBatch: unused, getBatch: unused, listBatches: unused, listJobTypes: unused, holdJob: async () => ({}),
  async startJob(request) {
    if (cancelledJobs.has(request.jobId)) throw conflict("Job is cancelled");
    reports.started.push(request);
    notify();
    return { job: undefined };
  },
  async completeJob(request) {
    if (cancelledJobs.has(request.jobId)) throw conflict("Job is cancelled");
    reports.completed.push(request);
    notify();
    return { job: undefined };
  },
  async failJob(request) {
    reports.failed.push(request);
    notify();
    return { job: undefined };
  },
};

const billingService: AsyncService<auth.BillingServer> = {
  getBalance: unused, listUsage: unused, checkBalance: unused,
  async reserveCredits(request) {
    if (request.orgId === "org_poor") throw insufficientCredits();
    reports.reserved.push(request);
    notify();
    return { orgId: request.orgId, credits: 100, reserved: request.credits };
  },
};

let standIns: StandIns;
let bus: Bus;
let worker: WorkerService;
let mediaDir: string;
let outputDir: string;
let config: WorkerConfig;
let files: { url: string; close(): Promise<void> };
const spawned = new Map<string, number>();

beforeAll(async () => {
  const { natsUrl } = testInfra();
  const namespace = testNamespace("worker");
  mediaDir = await mkdtemp(path.join(tmpdir(), "rb-worker-media-"));
  outputDir = await mkdtemp(path.join(tmpdir(), "rb-worker-out-"));
  await createTestMedia(mediaDir);
  files = await serveFiles(mediaDir);
  // Stand-ins for the jobs and auth services, each checking the worker's call tokens as the real one does.
  standIns = await startStandIns({ jobs: jobsService, billing: billingService });
  config = workerConfigSchema.parse({
    MODE: "test",
    // Inputs come from a file server on 127.0.0.1.
    ALLOW_PRIVATE_ADDRESSES: "true",
    NATS_URL: natsUrl,
    NATS_NAMESPACE: namespace,
    ...standIns.addresses,
    OUTPUT_DIR: outputDir,
    OUTPUT_SIGNING_SECRET: SECRET,
    PUBLIC_URL,
    WORKER_CONCURRENCY: "2",
    // The run's object store: the local directory above, or with STORAGE=s3 the run's S3 server.
    ...testStorageEnv(),
  });
  worker = await startWorkerService(config, {
    logger: createLogger({ service: "worker-test", level: "warn", destination: logDestination }),
    onProviderSpawn: (jobId, pid) => spawned.set(jobId, pid),
  });
  bus = await Bus.connect({ url: natsUrl, name: "worker-test", namespace });
  // The jobs service declares JOBS_EVENTS (the worker's NATS user may not); the cancel test publishes into it.
  await bus.ensureStreams([STREAMS.jobEvents]);
}, 120_000);

afterAll(async () => {
  await worker?.stop();
  await bus?.close();
  await standIns?.stop();
  await files?.close();
  await Promise.all([mediaDir, outputDir].map((dir) => rm(dir, { recursive: true, force: true })));
});

let sequence = 0;

it("drops a malformed dispatch and logs it by its ids, never its presigned input URLs (SECURITY-AUDIT finding 23)", async () => {
  const jobId = `job_malformed_${Date.now()}`;
  const presigned = "https://bucket.example/in.mp4?X-Amz-Signature=presigned-credential-in-a-dispatch";
  // No orgId: the worker cannot run it and drops it.
  await bus.publish("jobs.dispatch.qr.generate", { jobId, type: "qr.generate", inputs: { source: presigned }, params: { content: presigned } }, { msgId: `dispatch-${jobId}` });
  const dropped = await until(() => logLines.find((line) => line.includes("malformed dispatch message dropped") && line.includes(jobId)));
  expect(JSON.parse(dropped)).toMatchObject({ jobId, msg: "malformed dispatch message dropped" });
  expect(logLines.filter((line) => line.includes("presigned-credential"))).toEqual([]);
  expect(reports.started.some((report) => report.jobId === jobId)).toBe(false);
});

async function dispatch(type: string, inputs: Record<string, string>, params: Record<string, unknown> = {}, orgId = "org_test"): Promise<string> {
  const jobId = `job_${Date.now()}${sequence++}`;
  const body: jobEvents.JobDispatch = {
    jobId, orgId, type, inputs, params,
    limits: { maxRunSeconds: 120, maxInputBytes: 100 * 1024 * 1024, concurrency: 2 },
    createdAt: Date.now(),
  };
  await bus.publish(`jobs.dispatch.${type}.${jobId}`, body, { msgId: `dispatch-${jobId}` });
  return jobId;
}

describe("worker service", () => {
  it("runs an extract.metadata dispatch and reports CompleteJob with a signed URL that verifies", async () => {
    const jobId = await dispatch("extract.metadata", { source: `${files.url}/files/video.mp4` });
    const completed = await until(() => reports.completed.find((report) => report.jobId === jobId));
    expect(reports.reserved.find((report) => report.jobId === jobId)).toMatchObject({ orgId: "org_test", credits: 1 });
    expect(reports.started.find((report) => report.jobId === jobId)?.workerId).toBe(worker.workerId);
    expect(completed.cost).toEqual({ credits: 1, breakdown: "metadata" });
    expect(completed.result).toMatchObject({ outputKey: `org_test/${jobId}/output.json`, contentType: "application/json" });
    expect(completed.result?.metadata).toMatchObject({ width: 640, height: 360, fileSize: expect.any(Number) });

    const url = new URL(completed.result!.url);
    expect(`${url.origin}${url.pathname}`).toBe(`${PUBLIC_URL}/outputs/org_test/${jobId}/output.json`);
    const valid = verifyOutputSignature({
      key: completed.result!.outputKey,
      expires: url.searchParams.get("expires") ?? undefined,
      signature: url.searchParams.get("signature") ?? undefined,
      secret: SECRET,
    });
    expect(valid).toBe(true);
    expect(Number(url.searchParams.get("expires"))).toBeGreaterThan(Date.now() + 6 * 24 * 60 * 60 * 1000);
    const stored = await createObjectStore(config, { area: "outputs", localDir: outputDir }).open(completed.result!.outputKey);
    expect(stored?.contentType).toBe("application/json");
    stored?.stream.destroy();
  });

  it("charges a transcode by its output length and height", async () => {
    const jobId = await dispatch("transcode", { source: `${files.url}/files/video.mp4` }, { height: 180, crf: 35, preset: "ultrafast" });
    const completed = await until(() => reports.completed.find((report) => report.jobId === jobId));
    expect(completed.result?.metadata).toMatchObject({ width: 320, height: 180 });
    expect(completed.result!.metadata!.durationMs).toBeGreaterThan(2800);
    expect(completed.cost).toEqual({ credits: 1, breakdown: "0m3s video @180p" });
  });

  it("reports INPUT_ERROR for an unreachable input and never starts the job", async () => {
    const jobId = await dispatch("thumbnail", { source: `${files.url}/files/missing.mp4` });
    const failed = await until(() => reports.failed.find((report) => report.jobId === jobId));
    expect(failed.error).toEqual({ code: "INPUT_ERROR", message: "inputs.source: could not be fetched (HTTP 404)" });
    expect(reports.started.some((report) => report.jobId === jobId)).toBe(false);
    // Only the job type's minimum, reserved before the download (the ledger releases it when the job fails).
    expect(reports.reserved.filter((report) => report.jobId === jobId).map((report) => report.credits)).toEqual([1]);
  });

  it("reports INSUFFICIENT_CREDITS when the reservation is refused", async () => {
    const jobId = await dispatch("audio.extract", { source: `${files.url}/files/video.mp4` }, {}, "org_poor");
    const failed = await until(() => reports.failed.find((report) => report.jobId === jobId));
    expect(failed.error?.code).toBe("INSUFFICIENT_CREDITS");
    expect(reports.started.some((report) => report.jobId === jobId)).toBe(false);
  });

  it("stops without reporting when StartJob answers CONFLICT (cancelled while dispatched)", async () => {
    const jobId = `job_cancelled_${Date.now()}`;
    cancelledJobs.add(jobId);
    await bus.publish("jobs.dispatch.qr.generate", { jobId, orgId: "org_test", type: "qr.generate", inputs: {}, params: { content: "x" }, limits: undefined, createdAt: Date.now() }, { msgId: jobId });
    await until(() => reports.reserved.find((report) => report.jobId === jobId));
    // Give it a moment to (not) report anything else.
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(reports.completed.some((report) => report.jobId === jobId)).toBe(false);
    expect(reports.failed.some((report) => report.jobId === jobId)).toBe(false);
  });

  it("kills the ffmpeg of a running job within 2 s of a job.cancelled event and reports nothing", async () => {
    const jobId = await dispatch("transcode", { source: `${files.url}/files/long.mp4` }, { codec: "h265", preset: "veryslow" });
    await until(() => reports.started.find((report) => report.jobId === jobId));
    const pid = await until(() => spawned.get(jobId));
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(isAlive(pid)).toBe(true);

    cancelledJobs.add(jobId);
    const cancelledAt = Date.now();
    await bus.publish("jobs.events.job.cancelled", { jobId, orgId: "org_test", fromStatus: "running", cancelledAt }, { msgId: `cancel-${jobId}` });
    while (isAlive(pid) && Date.now() - cancelledAt < 3000) await new Promise((resolve) => setTimeout(resolve, 50));
    expect(isAlive(pid)).toBe(false);
    expect(Date.now() - cancelledAt).toBeLessThan(2000);

    // The message is acked (nothing pending on the durable) and nothing was reported for the job.
    const stream = bus.streamName(STREAMS.jobDispatch);
    const deadline = Date.now() + 5000;
    let pending = -1;
    while (Date.now() < deadline) {
      const info = await bus.jsm.consumers.info(stream, "workers");
      pending = info.num_ack_pending + info.num_pending;
      if (pending === 0) break;
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(pending).toBe(0);
    expect(reports.completed.some((report) => report.jobId === jobId)).toBe(false);
    expect(reports.failed.some((report) => report.jobId === jobId)).toBe(false);
  });
});
