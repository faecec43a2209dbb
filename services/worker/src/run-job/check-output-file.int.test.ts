import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { copyFile, mkdir, mkdtemp, open, readdir, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import type { auth, jobEvents, jobs } from "@renderbus/contracts";
import { newId } from "@renderbus/ids";
import type { JobTypeName } from "@renderbus/job-types";
import type { PromiseClient } from "@renderbus/rpc";
import { createLocalOutputStore } from "@renderbus/storage";
import { createLogger } from "@renderbus/telemetry";
import { createLocalUploadStore } from "@renderbus/uploads";
import { createInputAgent } from "../fetch-input/guarded-agent.js";
import { PROVIDERS, type ProviderOutput } from "../providers/index.js";
import { createTestMedia, serveFiles } from "../testing/test-media.js";
import { processDispatch, type JobRunnerDeps } from "./process-dispatch.js";

/**
 * The output a provider leaves in the job's directory is untrusted (review finding 3): a decoder exploit inside the
 * sandbox can leave `output.mp4` as a symlink to another tenant's output, which the worker would measure and publish,
 * or as a FIFO, whose open() blocks one of libuv's four threads for good. Fake providers leave exactly that; the
 * download, the probes, the measuring and the store around them are the worker's own.
 */
describe("the provider's output file", () => {
  let mediaDir: string;
  let outputDir: string;
  let otherTenantOutput: string;
  let files: { url: string; close(): Promise<void> };
  const agent = createInputAgent({ allowPrivateAddresses: true, connectTimeoutMs: 5000 });
  const fifos: string[] = [];
  const reports = { completed: [] as jobs.CompleteJobRequest[], failed: [] as jobs.FailJobRequest[], stored: [] as string[] };

  const jobsClient = {
    startJob: async () => ({ job: undefined }),
    completeJob: async (request: jobs.CompleteJobRequest) => (reports.completed.push(request), { job: undefined }),
    failJob: async (request: jobs.FailJobRequest) => (reports.failed.push(request), { job: undefined }),
  } as unknown as PromiseClient<jobs.JobsClient>;
  const billingClient = {
    reserveCredits: async (request: auth.ReserveCreditsRequest) => ({ orgId: request.orgId, credits: 100, reserved: request.credits }),
  } as unknown as PromiseClient<auth.BillingClient>;

  beforeAll(async () => {
    mediaDir = await mkdtemp(path.join(tmpdir(), "rb-output-media-"));
    outputDir = await mkdtemp(path.join(tmpdir(), "rb-output-store-"));
    await createTestMedia(mediaDir);
    files = await serveFiles(mediaDir);
    // Another org's stored output, readable by the worker's user (as every output in OUTPUT_DIR is).
    otherTenantOutput = path.join(outputDir, "org_other", "job_other", "output.mp4");
    await mkdir(path.dirname(otherTenantOutput), { recursive: true });
    await copyFile(path.join(mediaDir, "video.mp4"), otherTenantOutput);
  }, 120_000);

  afterEach(() => {
    vi.restoreAllMocks();
  });

  afterAll(async () => {
    // Should a regression open a FIFO again, a writer opening it lets that blocked open() return (EOF) rather than
    // hold the thread past the test.
    for (const fifo of fifos) await open(fifo, constants.O_WRONLY | constants.O_NONBLOCK).then((handle) => handle.close(), () => undefined);
    await files.close();
    await agent.close();
    await Promise.all([mediaDir, outputDir].map((dir) => rm(dir, { recursive: true, force: true })));
  });

  /**
   * Runs a dispatch of `type` on the test video as the worker does, with the provider replaced by `leaveOutput`.
   * Resolves with the outcome and how long the worker took after the provider returned (rejects after 10 s).
   */
  async function dispatchWithProvider(type: JobTypeName, leaveOutput: (workDir: string) => Promise<ProviderOutput>) {
    let providerReturnedAt = 0;
    vi.spyOn(PROVIDERS[type], "run").mockImplementation(async ({ workDir }) => {
      const output = await leaveOutput(workDir);
      providerReturnedAt = performance.now();
      return output;
    });
    const outputs = createLocalOutputStore(outputDir);
    const put = outputs.put.bind(outputs);
    vi.spyOn(outputs, "put").mockImplementation(async (key, file, contentType) => {
      reports.stored.push(key);
      return put(key, file, contentType);
    });
    const deps: JobRunnerDeps = {
      jobs: jobsClient,
      billing: billingClient,
      outputs,
      uploads: createLocalUploadStore({ directory: path.join(mediaDir, "uploads"), retentionMs: 60_000 }),
      inputAgent: agent,
      logger: createLogger({ service: "worker-output-file-test", level: "silent" }),
      workerId: "worker-output-file-test",
      publicUrl: "http://gateway.test",
      outputSigningSecret: "worker-output-file-test-secret",
      outputRetentionMs: 60_000,
      inputFetchTimeoutMs: 10_000,
      fallbackLimits: { maxRunSeconds: 60, maxInputBytes: 50 * 1024 * 1024 },
    };
    const jobId = newId("job");
    const orgId = "org_attacker";
    const dispatch: jobEvents.JobDispatch = {
      jobId, orgId, type, params: {},
      inputs: { source: `${files.url}/files/video.mp4` },
      limits: { maxRunSeconds: 60, maxInputBytes: 50 * 1024 * 1024, concurrency: 2 },
      createdAt: Date.now(),
    };
    let deadline: NodeJS.Timeout | undefined;
    const outcome = await Promise.race([
      processDispatch(dispatch, deps, new AbortController().signal),
      new Promise<never>((_, reject) => {
        deadline = setTimeout(() => reject(new Error("the worker was still processing the job 10 s later")), 10_000);
      }),
    ]).finally(() => clearTimeout(deadline));
    return { jobId, outcome, afterProviderMs: performance.now() - providerReturnedAt };
  }

  it("fails the job with PROVIDER_ERROR and stores nothing when output.mp4 is a symlink to another tenant's output", async () => {
    const { jobId, outcome, afterProviderMs } = await dispatchWithProvider("transcode", async (workDir) => {
      await symlink(otherTenantOutput, path.join(workDir, "output.mp4"));
      return { path: path.join(workDir, "output.mp4"), extension: "mp4", contentType: "video/mp4" };
    });
    expect(outcome).toBe("failed");
    expect(reports.failed.find((report) => report.jobId === jobId)?.error).toEqual({
      code: "PROVIDER_ERROR",
      message: "the provider's output is a symbolic link, not a regular file",
    });
    expect(afterProviderMs).toBeLessThan(1000);
    expect(reports.completed.map((report) => report.jobId)).not.toContain(jobId);
    expect(reports.stored).toEqual([]);
    expect(await readdir(outputDir)).toEqual(["org_other"]);
  });

  it("fails the job with PROVIDER_ERROR at once, opening nothing, when output.jpg is a FIFO", async () => {
    const { jobId, outcome, afterProviderMs } = await dispatchWithProvider("thumbnail", async (workDir) => {
      const fifo = path.join(workDir, "output.jpg");
      await promisify(execFile)("mkfifo", [fifo]);
      fifos.push(fifo);
      return { path: fifo, extension: "jpg", contentType: "image/jpeg" };
    });
    expect(outcome).toBe("failed");
    expect(reports.failed.find((report) => report.jobId === jobId)?.error).toEqual({
      code: "PROVIDER_ERROR",
      message: "the provider's output is a named pipe (FIFO), not a regular file",
    });
    expect(afterProviderMs).toBeLessThan(1000);
    expect(reports.stored).toEqual([]);
    expect(await readdir(outputDir)).toEqual(["org_other"]);
  });
});
