import { createReadStream, existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Bus } from "@renderbus/bus";
import type { jobEvents, jobs } from "@renderbus/contracts";
import { newId } from "@renderbus/ids";
import { priceOf } from "@renderbus/job-types";
import type { PromiseClient } from "@renderbus/rpc";
import { createLocalOutputStore } from "@renderbus/storage";
import { createLogger } from "@renderbus/telemetry";
import { createLocalUploadStore } from "@renderbus/uploads";
import { grantOrgCredits } from "../../../auth/src/admin/index.js";
import { settleJob } from "../../../auth/src/billing/credit-ledger.js";
import { startAuthHarness, type AuthHarness } from "../../../auth/src/testing/auth-harness.js";
import { createInputAgent, type InputAgent } from "../fetch-input/guarded-agent.js";
import { probeMedia } from "../media/probe.js";
import { writeMkvWithForgedDuration, writeRawH264 } from "../testing/misleading-media.js";
import { processDispatch, type JobRunnerDeps } from "./process-dispatch.js";

/**
 * "What is charged is what was produced" (SECURITY-AUDIT finding 5, and finding 12's reservation before download),
 * with real ffmpeg, the real auth service's credit ledger on PostgreSQL and its job-charges consumer: the worker
 * runs a dispatch, a stand-in for the jobs service publishes the job events the real one would, and the ledger
 * settles them. Sources lie about their length: a raw H.264 stream states none, an MKV claims 1 s of its 30 s.
 */
describe("charging the output produced", () => {
  let harness: AuthHarness;
  let bus: Bus;
  let mediaDir: string;
  let outputDir: string;
  let inputServer: Server;
  let inputUrl: string;
  let inputAgent: InputAgent;
  /** Per request path (`/<org>/<file>`): the org's reserved credits when the input was requested. */
  const reservedAtDownload = new Map<string, number>();
  const completed = new Map<string, jobs.CompleteJobRequest>();
  const failed = new Map<string, jobs.FailJobRequest>();
  const started = new Set<string>();

  /** Stands in for the jobs service: records reports and publishes the terminal events the ledger settles from. */
  function jobsService(orgId: string): PromiseClient<jobs.JobsClient> {
    const service = {
      async startJob(request: jobs.StartJobRequest) {
        started.add(request.jobId);
        return { job: undefined };
      },
      async completeJob(request: jobs.CompleteJobRequest) {
        completed.set(request.jobId, request);
        await bus.publish("jobs.events.job.completed", { jobId: request.jobId, orgId, cost: request.cost }, { msgId: newId("evt") });
        return { job: undefined };
      },
      async failJob(request: jobs.FailJobRequest) {
        failed.set(request.jobId, request);
        await bus.publish("jobs.events.job.failed", { jobId: request.jobId, orgId, error: request.error }, { msgId: newId("evt") });
        return { job: undefined };
      },
    };
    return service as unknown as PromiseClient<jobs.JobsClient>;
  }

  /** An org holding exactly `credits`: its monthly credits spent on a settled job, then `credits` granted. */
  async function orgWithBalance(credits: number): Promise<string> {
    const org = await harness.seedOrg("pro");
    const monthly = (await harness.billingClient.getBalance({}, { auth: org.context })).credits;
    const drain = newId("job");
    await harness.billingClient.reserveCredits({ orgId: org.orgId, jobId: drain, credits: monthly });
    await settleJob(harness.store.db, org.orgId, drain, { outcome: "completed", credits: monthly });
    if (credits > 0) await grantOrgCredits(harness.store, org.orgId, credits);
    return org.orgId;
  }

  async function ledgerOf(orgId: string, jobId: string) {
    const rows = await harness.store.db.selectFrom("credit_ledger").select(["kind", "credits"]).where("org_id", "=", orgId).where("job_id", "=", jobId).execute();
    const sum = (kind: string) => rows.filter((row) => row.kind === kind).reduce((total, row) => total + row.credits, 0);
    return { reserved: sum("reserve"), captured: sum("capture"), released: sum("release") };
  }

  async function balanceOf(orgId: string) {
    return harness.store.db.selectFrom("credit_balances").select(["available", "reserved"]).where("org_id", "=", orgId).executeTakeFirstOrThrow();
  }

  /** Runs one job through the worker's processing, as the dispatch consumer would. */
  async function run(orgId: string, type: string, file: string, params: Record<string, unknown>) {
    const jobId = newId("job");
    const dispatch: jobEvents.JobDispatch = {
      jobId, orgId, type, params,
      inputs: { source: `${inputUrl}/${orgId}/${file}` },
      limits: { maxRunSeconds: 120, maxInputBytes: 100 * 1024 * 1024, concurrency: 2 },
      createdAt: Date.now(),
    };
    const deps: JobRunnerDeps = {
      jobs: jobsService(orgId),
      billing: harness.billingClient,
      outputs: createLocalOutputStore(outputDir),
      uploads: createLocalUploadStore({ directory: path.join(outputDir, "uploads"), retentionMs: 60_000 }),
      inputAgent,
      logger: createLogger({ service: "worker-charge-test", level: "silent" }),
      workerId: "worker-charge-test",
      publicUrl: "http://gateway.test",
      outputSigningSecret: "worker-charge-test-secret",
      outputRetentionMs: 60_000,
      inputFetchTimeoutMs: 30_000,
      fallbackLimits: { maxRunSeconds: 120, maxInputBytes: 100 * 1024 * 1024 },
    };
    const outcome = await processDispatch(dispatch, deps, new AbortController().signal);
    // The ledger settles from the published event; wait until nothing of the job is reserved any more.
    await expect.poll(async () => {
      const ledger = await ledgerOf(orgId, jobId);
      return ledger.reserved - ledger.captured - ledger.released;
    }, { timeout: 15_000 }).toBe(0);
    return { jobId, outcome, ledger: await ledgerOf(orgId, jobId) };
  }

  /** The price of the stored output, measured again from the file. */
  async function priceOfStoredOutput(request: jobs.CompleteJobRequest, output: "video" | "audio") {
    const probe = await probeMedia(path.join(outputDir, request.result!.outputKey));
    return { durationMs: probe.durationMs!, price: priceOf({ output, durationMs: probe.durationMs, height: probe.height }) };
  }

  beforeAll(async () => {
    harness = await startAuthHarness("chargeout");
    bus = await Bus.connect({ url: harness.config.NATS_URL, name: "charge-test-jobs", namespace: harness.config.NATS_NAMESPACE });
    mediaDir = await mkdtemp(path.join(tmpdir(), "rb-charge-media-"));
    outputDir = await mkdtemp(path.join(tmpdir(), "rb-charge-out-"));
    await Promise.all([
      writeRawH264(path.join(mediaDir, "raw.h264"), 30),
      writeMkvWithForgedDuration(path.join(mediaDir, "forged.mkv"), 30, 1),
    ]);
    inputServer = createServer((request, response) => {
      const [, orgId, name] = (request.url ?? "").split("/");
      void balanceOf(orgId!).then(
        (balance) => {
          reservedAtDownload.set(request.url!, balance.reserved);
          response.writeHead(200, { "content-type": "application/octet-stream" });
          createReadStream(path.join(mediaDir, path.basename(name!))).pipe(response);
        },
        () => response.writeHead(500).end(),
      );
    });
    await new Promise<void>((resolve) => inputServer.listen(0, "127.0.0.1", resolve));
    inputUrl = `http://127.0.0.1:${(inputServer.address() as AddressInfo).port}`;
    inputAgent = createInputAgent({ allowPrivateAddresses: true });
  }, 120_000);

  afterAll(async () => {
    await inputAgent?.close();
    await new Promise<void>((resolve) => (inputServer ? inputServer.close(() => resolve()) : resolve()));
    await bus?.close();
    await harness?.stop();
    await Promise.all([mediaDir, outputDir].filter(Boolean).map((dir) => rm(dir, { recursive: true, force: true })));
  });

  it("the test media lie as intended: the raw stream states no duration, the MKV claims 1 s", async () => {
    expect((await probeMedia(path.join(mediaDir, "raw.h264"))).durationMs).toBeNull();
    expect((await probeMedia(path.join(mediaDir, "forged.mkv"))).durationMs).toBe(1000);
  });

  it("counts a raw H.264 stream's frames, reserves its 30 s before the provider starts, and captures exactly the produced output's price", async () => {
    const orgId = await orgWithBalance(100);
    const { jobId, outcome, ledger } = await run(orgId, "transcode", "raw.h264", { preset: "ultrafast", crf: 35 });
    expect(outcome).toBe("completed");
    // The job type's minimum was reserved before the input was requested.
    expect(reservedAtDownload.get(`/${orgId}/raw.h264`)).toBe(1);
    const report = completed.get(jobId)!;
    const produced = await priceOfStoredOutput(report, "video");
    expect(produced.durationMs).toBeGreaterThan(29_900);
    expect(report.cost).toEqual(produced.price);
    expect(report.cost).toEqual({ credits: 3, breakdown: "0m30s video @240p" });
    expect(ledger).toEqual({ reserved: 3, captured: 3, released: 0 });
    expect(await balanceOf(orgId)).toEqual({ available: 97, reserved: 0 });
  });

  it("stops the output of an MKV whose Duration understates it at the length the reservation covers, and charges that output", async () => {
    const orgId = await orgWithBalance(100);
    const { jobId, outcome, ledger } = await run(orgId, "transcode", "forged.mkv", { preset: "ultrafast", crf: 35 });
    expect(outcome).toBe("completed");
    const report = completed.get(jobId)!;
    const produced = await priceOfStoredOutput(report, "video");
    // 1 credit reserved buys one 10 s unit: the 30 s of frames are cut there, not given away.
    expect(produced.durationMs).toBeGreaterThan(9_900);
    expect(produced.durationMs).toBeLessThan(10_050);
    expect(report.cost).toEqual(produced.price);
    expect(report.cost?.credits).toBe(1);
    expect(ledger).toEqual({ reserved: 1, captured: 1, released: 0 });
    expect(await balanceOf(orgId)).toEqual({ available: 99, reserved: 0 });
  });

  it("caps an audio extraction from the forged MKV the same way", async () => {
    const orgId = await orgWithBalance(10);
    const { jobId, ledger } = await run(orgId, "audio.extract", "forged.mkv", { format: "mp3" });
    const report = completed.get(jobId)!;
    const produced = await priceOfStoredOutput(report, "audio");
    expect(produced.durationMs).toBeLessThan(10_050);
    expect(report.cost).toEqual(produced.price);
    expect(ledger.captured).toBe(produced.price.credits);
    expect(await balanceOf(orgId)).toEqual({ available: 10 - produced.price.credits, reserved: 0 });
  });

  it("refuses a job the balance cannot cover once the source is measured: INSUFFICIENT_CREDITS, no provider run, nothing charged", async () => {
    const orgId = await orgWithBalance(2);
    const { jobId, outcome, ledger } = await run(orgId, "transcode", "raw.h264", { preset: "ultrafast" });
    expect(outcome).toBe("failed");
    expect(failed.get(jobId)?.error?.code).toBe("INSUFFICIENT_CREDITS");
    expect(failed.get(jobId)?.error?.message).toContain("3 credits");
    expect(started.has(jobId)).toBe(false);
    expect(ledger).toEqual({ reserved: 1, captured: 0, released: 1 });
    expect(await balanceOf(orgId)).toEqual({ available: 2, reserved: 0 });
  });

  it("gives an org with 1 credit the forged MKV's first 10 s for exactly 1 credit, never the whole 30 s", async () => {
    const orgId = await orgWithBalance(1);
    const { jobId, outcome, ledger } = await run(orgId, "transcode", "forged.mkv", { preset: "ultrafast", crf: 35 });
    expect(outcome).toBe("completed");
    const produced = await priceOfStoredOutput(completed.get(jobId)!, "video");
    expect(produced.price.credits).toBe(1);
    expect(ledger).toEqual({ reserved: 1, captured: 1, released: 0 });
    expect(await balanceOf(orgId)).toEqual({ available: 0, reserved: 0 });
  });

  it("raises the reservation when the output's last frame prices it a unit higher, and fails instead of under-charging when it cannot", async () => {
    // At 1.05 fps the last frame before the 10 s cap starts at 9.52 s and ends at 10.48 s: 2 units, 1 reserved.
    const params = { preset: "ultrafast", crf: 35, fps: 1.05 };
    const richOrg = await orgWithBalance(10);
    const rich = await run(richOrg, "transcode", "forged.mkv", params);
    const produced = await priceOfStoredOutput(completed.get(rich.jobId)!, "video");
    expect(produced.price.credits).toBe(2);
    expect(completed.get(rich.jobId)?.cost).toEqual(produced.price);
    expect(rich.ledger).toEqual({ reserved: 2, captured: 2, released: 0 });
    expect(await balanceOf(richOrg)).toEqual({ available: 8, reserved: 0 });

    const poorOrg = await orgWithBalance(1);
    const poor = await run(poorOrg, "transcode", "forged.mkv", params);
    expect(poor.outcome).toBe("failed");
    expect(failed.get(poor.jobId)?.error?.code).toBe("INSUFFICIENT_CREDITS");
    expect(completed.has(poor.jobId)).toBe(false);
    expect(existsSync(path.join(outputDir, poorOrg)), "an output nobody paid for is never stored").toBe(false);
    expect(poor.ledger).toEqual({ reserved: 1, captured: 0, released: 1 });
    expect(await balanceOf(poorOrg)).toEqual({ available: 1, reserved: 0 });
  });

  it("downloads nothing for an org that cannot pay the job type's minimum", async () => {
    const orgId = await orgWithBalance(0);
    const { jobId, outcome, ledger } = await run(orgId, "transcode", "raw.h264", { preset: "ultrafast" });
    expect(outcome).toBe("failed");
    expect(failed.get(jobId)?.error?.code).toBe("INSUFFICIENT_CREDITS");
    expect(reservedAtDownload.has(`/${orgId}/raw.h264`)).toBe(false);
    expect(ledger).toEqual({ reserved: 0, captured: 0, released: 0 });
  });
});
