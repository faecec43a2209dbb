import { execFile } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { api, createOrg, repoRoot, startFileServer, waitFor } from "./helpers.js";

const run = promisify(execFile);
const TERMINAL = ["completed", "failed", "cancelled"];

/** Test media made by ffmpeg: a short clip with sound, a long 720p clip for cancellation, a PNG, subtitles. */
async function makeMedia(): Promise<string> {
  const dir = mkdtempSync(join(tmpdir(), "rb-jobs-media-"));
  const ffmpeg = (...args: string[]) => run("ffmpeg", ["-v", "error", "-y", ...args]);
  await ffmpeg("-f", "lavfi", "-i", "testsrc=duration=3:size=640x360:rate=25", "-f", "lavfi", "-i", "sine=frequency=440:duration=3", "-c:v", "libx264", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", join(dir, "clip.mp4"));
  // 20 s is enough: its VP9 transcode below runs for minutes (still running after 10 s on an idle machine), and making
  // 120 s of it took 19 s of CPU.
  await ffmpeg("-f", "lavfi", "-i", "testsrc2=duration=20:size=1280x720:rate=30", "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", join(dir, "long.mp4"));
  await ffmpeg("-f", "lavfi", "-i", "color=c=red:size=64x64", "-frames:v", "1", join(dir, "logo.png"));
  writeFileSync(join(dir, "subs.srt"), "1\n00:00:00,000 --> 00:00:02,500\nHello from Renderbus\n");
  writeFileSync(join(dir, "not-media.mp4"), "this is not a video at all");
  return dir;
}

describe("jobs over REST with real ffmpeg workers", () => {
  let system: RunningSystem;
  let media: Awaited<ReturnType<typeof startFileServer>>;

  beforeAll(async () => {
    const infra = testInfra();
    media = await startFileServer(await makeMedia());
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("jobse2e"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("jobse2e"),
      outputDir: mkdtempSync(join(tmpdir(), "rb-out-")),
      env: {
        MODE: "test",
        // A plan with 10 credits and room to run everything at once, for the overspending race.
        PLANS_JSON: JSON.stringify({
          starter: { monthlyCredits: 10, concurrency: 25, requestsPerMinute: 100000 },
          pro: { requestsPerMinute: 100000 },
          free: { requestsPerMinute: 100000 },
        }),
        // Polling many jobs from 127.0.0.1: the per-client budget is lifted like the plans'.
        IP_REQUESTS_PER_MINUTE: "1000000",
      },
    });
  }, 180_000);

  afterAll(async () => {
    await system?.stop();
    await media?.close();
  });

  const finished = (call: ReturnType<typeof api>, jobId: string, timeoutMs = 90_000) =>
    waitFor(async () => {
      const response = await call("GET", `/jobs/${jobId}`);
      return TERMINAL.includes(response.body.data.status) ? response.body.data : undefined;
    }, { timeoutMs, intervalMs: 250, what: `job ${jobId} to finish` });

  it("runs every job type to a downloadable output and charges it in the usage ledger", async () => {
    const { key } = await createOrg(system.env, "pro", "Types");
    const call = api(system.gatewayUrl, key);
    const source = media.url("clip.mp4");
    const specs = [
      { type: "transcode", inputs: { source }, params: { codec: "vp9", format: "webm", width: 320, crf: 40 }, check: (m: any) => m.width === 320 && m.durationMs > 2500 },
      { type: "thumbnail", inputs: { source }, params: { timestamp: 1, width: 160, format: "png" }, check: (m: any) => m.width === 160 },
      { type: "audio.extract", inputs: { source }, params: { format: "mp3" }, check: (m: any) => m.durationMs > 2500 && m.width === null },
      { type: "extract.metadata", inputs: { source }, params: {}, check: (m: any) => m.fileSize > 0 },
      { type: "qr.generate", inputs: {}, params: { content: "https://renderbus.dev", size: 256 }, check: (m: any) => m.width === 256 },
      { type: "watermark.add", inputs: { source, image: media.url("logo.png") }, params: { text: "RB", position: "top-left" }, check: (m: any) => m.width === 640 },
      { type: "caption.burn", inputs: { source, subtitles: media.url("subs.srt") }, params: { fontSize: 20 }, check: (m: any) => m.height === 360 },
    ];
    const submitted = await Promise.all(specs.map((spec) => call("POST", "/jobs", { type: spec.type, inputs: spec.inputs, params: spec.params })));
    for (const response of submitted) expect(response.status, JSON.stringify(response.body)).toBe(201);

    for (const [index, spec] of specs.entries()) {
      const job = await finished(call, submitted[index]!.body.data.id);
      expect(job.status, `${spec.type}: ${JSON.stringify(job.error)}`).toBe("completed");
      expect(spec.check(job.result.metadata), `${spec.type} metadata ${JSON.stringify(job.result.metadata)}`).toBe(true);
      expect(job.cost.credits).toBeGreaterThanOrEqual(1);
      expect(job.cost.breakdown.length).toBeGreaterThan(0);
      const download = await fetch(job.result.url);
      expect(download.status).toBe(200);
      expect((await download.arrayBuffer()).byteLength).toBe(job.result.metadata.fileSize);
    }

    const usage = await waitFor(async () => {
      const response = await call("GET", "/billing/usage?limit=100");
      const captures = response.body.data.filter((entry: { kind: string }) => entry.kind === "capture");
      return captures.length >= specs.length ? response.body.data : undefined;
    }, { what: "one capture per completed job" });
    const captured = usage.filter((entry: { kind: string }) => entry.kind === "capture").map((entry: { jobId: string }) => entry.jobId);
    expect(new Set(captured)).toEqual(new Set(submitted.map((response) => response.body.data.id)));
  });

  it("streams status changes over SSE until the job is terminal", async () => {
    const { key } = await createOrg(system.env, "pro", "Sse");
    const call = api(system.gatewayUrl, key);
    const job = (await call("POST", "/jobs", { type: "extract.metadata", inputs: { source: media.url("clip.mp4") } })).body.data;
    const response = await fetch(`${system.gatewayUrl}/jobs/${job.id}/events`, { headers: { authorization: `Bearer ${key}` } });
    expect(response.headers.get("content-type")).toMatch(/^text\/event-stream/);
    const text = await response.text(); // the stream ends when the job is terminal
    const statuses = [...text.matchAll(/^event: (\w+)$/gm)].map((match) => match[1]);
    expect(statuses.at(-1)).toBe("completed");
    expect(new Set(statuses).size).toBe(statuses.length);
  });

  it("fails a corrupt input with PROVIDER_ERROR or INPUT_ERROR and an unreachable URL with INPUT_ERROR, charging nothing", async () => {
    const { key } = await createOrg(system.env, "pro", "Bad inputs");
    const call = api(system.gatewayUrl, key);
    const corrupt = (await call("POST", "/jobs", { type: "transcode", inputs: { source: media.url("not-media.mp4") } })).body.data;
    const missing = (await call("POST", "/jobs", { type: "thumbnail", inputs: { source: "http://127.0.0.1:9/nothing.mp4" } })).body.data;
    const corruptJob = await finished(call, corrupt.id);
    expect(corruptJob.status).toBe("failed");
    expect(["PROVIDER_ERROR", "INPUT_ERROR"]).toContain(corruptJob.error.code);
    expect(corruptJob.cost).toBeNull();
    const missingJob = await finished(call, missing.id);
    expect(missingJob.error.code).toBe("INPUT_ERROR");
    const usage = (await call("GET", "/billing/usage?limit=100")).body.data;
    expect(usage.filter((entry: { kind: string }) => entry.kind === "capture")).toHaveLength(0);
  });

  it("cancels a long transcode while it runs: the ffmpeg process is gone within 2 s and nothing is charged", async () => {
    const { key } = await createOrg(system.env, "pro", "Cancel");
    const call = api(system.gatewayUrl, key);
    const job = (await call("POST", "/jobs", { type: "transcode", inputs: { source: media.url("long.mp4") }, params: { codec: "vp9", format: "webm", crf: 37, width: 1262 } })).body.data;
    await waitFor(async () => ((await call("GET", `/jobs/${job.id}`)).body.data.status === "running" ? true : undefined), { timeoutMs: 60_000, what: "running" });
    const ffmpegRunning = async () => (await run("ps", ["-eo", "args"])).stdout.split("\n").some((line) => line.startsWith("ffmpeg") && line.includes("1262"));
    await waitFor(async () => ((await ffmpegRunning()) ? true : undefined), { what: "the transcode's ffmpeg process" });

    const cancelled = await call("POST", `/jobs/${job.id}/cancel`);
    expect(cancelled.status).toBe(200);
    expect(cancelled.body.data.status).toBe("cancelled");
    await new Promise((done) => setTimeout(done, 2000));
    expect(await ffmpegRunning()).toBe(false);

    const again = await call("POST", `/jobs/${job.id}/cancel`);
    expect(again.status).toBe(409);
    expect(again.body.error.code).toBe("CONFLICT");
    const ledger = await waitFor(async () => {
      const entries = (await call("GET", "/billing/usage?limit=100")).body.data.filter((entry: { jobId: string }) => entry.jobId === job.id);
      return entries.some((entry: { kind: string }) => entry.kind === "release") || entries.length === 0 ? entries : undefined;
    }, { what: "the reservation to be released" });
    expect(ledger.filter((entry: { kind: string }) => entry.kind === "capture")).toHaveLength(0);
  });

  it("never overspends: 50 concurrent submissions against 10 credits run at most 10 jobs and the balance equals the ledger", async () => {
    const { key } = await createOrg(system.env, "starter", "Race");
    const call = api(system.gatewayUrl, key);
    const responses = await Promise.all(
      Array.from({ length: 50 }, () => call("POST", "/jobs", { type: "extract.metadata", inputs: { source: media.url("clip.mp4") } })),
    );
    for (const response of responses) {
      expect([201, 402]).toContain(response.status);
      if (response.status === 402) expect(response.body.error.code).toBe("INSUFFICIENT_CREDITS");
    }
    const accepted = responses.filter((response) => response.status === 201).map((response) => response.body.data.id as string);
    const jobs = await Promise.all(accepted.map((id) => finished(call, id)));
    const completed = jobs.filter((job) => job.status === "completed");
    expect(completed.length).toBeLessThanOrEqual(10);
    expect(completed.length).toBeGreaterThan(0);
    for (const job of jobs.filter((job) => job.status === "failed")) expect(job.error.code).toBe("INSUFFICIENT_CREDITS");

    const balance = (await call("GET", "/billing/balance")).body.data;
    expect(balance.credits).toBeGreaterThanOrEqual(0);
    expect(balance).toMatchObject({ plan: expect.any(String), monthlyCredits: expect.any(Number), renewsAt: expect.any(Number) });
    expect(balance.renewsAt).toBeGreaterThan(Date.now());
    const ledger = (await call("GET", "/billing/usage?limit=100")).body.data as { kind: string; credits: number }[];
    const grants = ledger.filter((entry) => entry.kind === "grant").reduce((sum, entry) => sum + entry.credits, 0);
    const captures = ledger.filter((entry) => entry.kind === "capture").reduce((sum, entry) => sum + Math.abs(entry.credits), 0);
    expect(balance.credits + balance.reserved).toBe(grants - captures);
  });

  it("keeps organizations apart: another org's job and batch ids are 404", async () => {
    const a = api(system.gatewayUrl, (await createOrg(system.env, "pro", "A")).key);
    const b = api(system.gatewayUrl, (await createOrg(system.env, "pro", "B")).key);
    const job = (await a("POST", "/jobs", { type: "qr.generate", params: { content: "a" } })).body.data;
    const batch = (await a("POST", "/batches", { jobs: [{ type: "qr.generate", params: { content: "b" } }] })).body.data;
    for (const [method, path] of [["GET", `/jobs/${job.id}`], ["POST", `/jobs/${job.id}/cancel`], ["GET", `/batches/${batch.id}`], ["GET", `/jobs/${job.id}/events`]] as const) {
      const response = await b(method, path);
      expect(response.status, `${method} ${path}`).toBe(404);
      expect(response.body.error.code).toBe("NOT_FOUND");
    }
    expect((await a("GET", "/batches")).body.data.map((listed: { id: string }) => listed.id)).toEqual([batch.id]);
    expect((await b("GET", "/batches")).body.data).toEqual([]);
  });
});
