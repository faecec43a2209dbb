import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Bus } from "@renderbus/bus";
import { parseConfig } from "@renderbus/config";
import type { auth, jobs, jobEvents } from "@renderbus/contracts";
import type { AsyncService } from "@renderbus/rpc";
import { createLogger } from "@renderbus/telemetry";
import { testInfra, testNamespace } from "@renderbus/testing";
import { workerConfigSchema } from "../config.js";
import { startWorkerService, type WorkerService } from "../service.js";
import { notPartOfThisTest as unused, startStandIns, type StandIns } from "../testing/stand-in-services.js";

/**
 * The input guard is on unless ALLOW_PRIVATE_ADDRESSES=true, whatever the MODE: a development-mode worker configured
 * with nothing about addresses fails a job whose input is on 127.0.0.1 without connecting to it.
 */
describe("input SSRF guard by default", () => {
  const failed: jobs.FailJobRequest[] = [];
  let connections = 0;
  let inputServer: Server;
  let standIns: StandIns;
  let worker: WorkerService;
  let bus: Bus;
  let outputDir: string;

  const jobsService: AsyncService<jobs.JobsServer> = {
    submitJob: unused, getJob: unused, listJobs: unused, cancelJob: unused, submitBatch: unused, getBatch: unused, listBatches: unused, listJobTypes: unused, holdJob: async () => ({}),
    startJob: async () => ({ job: undefined }),
    completeJob: async () => ({ job: undefined }),
    async failJob(request) {
      failed.push(request);
      return { job: undefined };
    },
  };
  const billingService: AsyncService<auth.BillingServer> = {
    getBalance: unused, listUsage: unused, checkBalance: unused,
    reserveCredits: async (request) => ({ orgId: request.orgId, credits: 100, reserved: request.credits }),
  };

  beforeAll(async () => {
    inputServer = createServer((_request, response) => response.end("media"));
    inputServer.on("connection", () => (connections += 1));
    await new Promise<void>((resolve) => inputServer.listen(0, "127.0.0.1", resolve));
    standIns = await startStandIns({ jobs: jobsService, billing: billingService });
    outputDir = await mkdtemp(path.join(tmpdir(), "rb-worker-guard-"));
    const namespace = testNamespace("workerguard");
    const config = parseConfig(workerConfigSchema, {
      MODE: "development",
      NATS_URL: testInfra().natsUrl,
      NATS_NAMESPACE: namespace,
      ...standIns.addresses,
      OUTPUT_DIR: outputDir,
      INPUT_CONNECT_TIMEOUT_MS: "2000",
    });
    expect(config.ALLOW_PRIVATE_ADDRESSES).toBe(false);
    worker = await startWorkerService(config, { logger: createLogger({ service: "worker-guard-test", level: "silent" }) });
    bus = await Bus.connect({ url: testInfra().natsUrl, name: "worker-guard-test", namespace });
  }, 120_000);

  afterAll(async () => {
    await worker?.stop();
    await bus?.close();
    await standIns?.stop();
    await new Promise<void>((resolve) => (inputServer ? inputServer.close(() => resolve()) : resolve()));
    if (outputDir) await rm(outputDir, { recursive: true, force: true });
  });

  it("fails a job whose input is on a loopback address with INPUT_ERROR, never connecting", async () => {
    const jobId = `job_guard_${Date.now()}`;
    const { port } = inputServer.address() as AddressInfo;
    const body: jobEvents.JobDispatch = {
      jobId, orgId: "org_test", type: "extract.metadata", inputs: { source: `http://127.0.0.1:${port}/video.mp4` }, params: {},
      limits: { maxRunSeconds: 60, maxInputBytes: 10 * 1024 * 1024, concurrency: 1 },
      createdAt: Date.now(),
    };
    await bus.publish("jobs.dispatch.extract.metadata", body, { msgId: `dispatch-${jobId}` });
    const deadline = Date.now() + 30_000;
    while (!failed.some((report) => report.jobId === jobId) && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 100));
    expect(failed.find((report) => report.jobId === jobId)?.error).toEqual({ code: "INPUT_ERROR", message: "inputs.source: the URL points to an address that is not allowed" });
    expect(connections).toBe(0);
  });
});
