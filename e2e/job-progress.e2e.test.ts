import { execFile, spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { ensureDashboardBuilt, launchChromium, screenshot } from "./dashboard/browser.js";
import { api, createOrg, repoRoot, startFileServer, waitFor } from "./helpers.js";
import { RenderbusClient, type Job } from "../packages/sdk/src/index.js";

const run = promisify(execFile);

interface Progress {
  percent: number | null;
  etaMs: number | null;
  updatedAt: number;
}

/** Reads an SSE response to its end: every event with its parsed data, in order. */
async function readEvents(response: Response): Promise<Array<{ event: string; data: unknown }>> {
  const events: Array<{ event: string; data: unknown }> = [];
  const decoder = new TextDecoder();
  let buffer = "";
  for await (const chunk of response.body as unknown as AsyncIterable<Uint8Array>) {
    buffer += decoder.decode(chunk, { stream: true });
    for (let end = buffer.indexOf("\n\n"); end >= 0; end = buffer.indexOf("\n\n")) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event !== undefined && data !== undefined) events.push({ event, data: JSON.parse(data) });
    }
  }
  return events;
}

describe("live job progress (docs/concepts.md, Progress)", () => {
  let system: RunningSystem;
  let media: Awaited<ReturnType<typeof startFileServer>>;
  let browser: Browser | undefined;

  beforeAll(async () => {
    const infra = testInfra();
    await ensureDashboardBuilt();
    const dir = mkdtempSync(join(tmpdir(), "rb-progress-media-"));
    // Long enough to encode for several seconds with the "slow" preset, even on an idle machine (20 s of it: ~18 s of
    // CPU here, ~10 s of wall time on 2 idle cores), and no longer: four such transcodes are most of this file's time.
    await run("ffmpeg", [
      "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=duration=20:size=960x540:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:duration=20",
      "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", join(dir, "clip.mp4"),
    ]);
    media = await startFileServer(dir);
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("progresse2e"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("progresse2e"),
      outputDir: mkdtempSync(join(tmpdir(), "rb-out-")),
      // Run-time caps raised: on a busy machine the "slow" transcode takes minutes.
      env: { MODE: "test", PLANS_JSON: JSON.stringify({ pro: { requestsPerMinute: 100000 }, free: { requestsPerMinute: 100000, maxRunSeconds: 900 } }), IP_REQUESTS_PER_MINUTE: "1000000" },
    });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await system?.stop();
    await media?.close();
  });

  it("a running transcode shows progress in GET /jobs/{id} and as SSE progress events, and completes at 100%", async () => {
    const { key } = await createOrg(system.env, "pro", "Progress");
    const call = api(system.gatewayUrl, key);
    const submitted = await call("POST", "/jobs", { type: "transcode", inputs: { source: media.url("clip.mp4") }, params: { preset: "slow", crf: 20 } });
    expect(submitted.status).toBe(201);
    const jobId = submitted.body.data.id as string;
    expect(submitted.body.data.progress).toBeNull();

    const stream = await fetch(`${system.gatewayUrl}/jobs/${jobId}/events`, { headers: { authorization: `Bearer ${key}`, accept: "text/event-stream" } });
    expect(stream.status).toBe(200);
    const eventsRead = readEvents(stream);

    // While it runs, GET shows a percent between 0 and 100 with an ETA, refreshed as ffmpeg goes.
    const seen: Progress[] = [];
    await waitFor(
      async () => {
        const { body } = await call("GET", `/jobs/${jobId}`);
        const job = body.data as { status: string; progress: Progress | null };
        if (job.status === "running" && job.progress && job.progress.percent !== null && job.progress.percent > 0) {
          seen.push(job.progress);
          if (seen.length >= 2 && seen.at(-1)!.updatedAt > seen[0]!.updatedAt) return true;
        }
        if (["completed", "failed", "cancelled"].includes(job.status)) throw new Error(`job ended (${job.status}) before two progress readings: ${JSON.stringify(seen)}`);
        return undefined;
      },
      { timeoutMs: 240_000, intervalMs: 200, what: "two progress readings of the running job" },
    );
    for (const progress of seen) {
      expect(progress.percent).toBeGreaterThan(0);
      expect(progress.percent).toBeLessThanOrEqual(100);
      expect(progress.etaMs === null || progress.etaMs >= 0).toBe(true);
    }
    expect(seen.at(-1)!.percent!).toBeGreaterThanOrEqual(seen[0]!.percent!);

    const events = await eventsRead;
    const names = events.map((event) => event.event);
    expect(names.at(-1)).toBe("completed");
    // `progress` events: the running job object with its new progress, at most one per 500 ms.
    const progressEvents = events.filter((event) => event.event === "progress").map((event) => event.data as { status: string; progress: Progress });
    expect(progressEvents.length).toBeGreaterThanOrEqual(2);
    const ticks = progressEvents.map((job) => {
      expect(job.status).toBe("running");
      return job.progress;
    });
    for (let i = 1; i < ticks.length; i++) {
      expect(ticks[i]!.percent!).toBeGreaterThanOrEqual(ticks[i - 1]!.percent!);
      expect(ticks[i]!.updatedAt - ticks[i - 1]!.updatedAt).toBeGreaterThanOrEqual(500);
    }
    // The completed job shows 100%.
    const completed = events.at(-1)!.data as { progress: Progress; timing: { completedAt: number } };
    expect(completed.progress).toEqual({ percent: 100, etaMs: 0, updatedAt: completed.timing.completedAt });

    const done = await call("GET", `/jobs/${jobId}`);
    expect(done.body.data.status).toBe("completed");
    expect(done.body.data.progress).toEqual({ percent: 100, etaMs: 0, updatedAt: done.body.data.timing.completedAt });
  }, 300_000);

  it("the dashboard shows a live progress bar in the jobs list and on the job page, in a real browser", async () => {
    browser = await launchChromium();
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, baseURL: system.gatewayUrl });
    context.setDefaultTimeout(60_000);
    const page = await context.newPage();
    const problems: string[] = [];
    page.on("pageerror", (error) => problems.push(error.message));
    await page.goto("/app/");
    await page.getByRole("link", { name: "Create an account" }).click();
    await page.getByLabel("Name").fill("Progress Watcher");
    await page.getByLabel("Email").fill(`progress-${Date.now()}@example.com`);
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
    // Submitted as the dashboard's API client does (session cookie + CSRF token); the free plan runs one at a time.
    const jobId = await page.evaluate(async (source) => {
      const token = /(?:^|;\s*)rb_csrf=([^;]*)/.exec((globalThis as unknown as { document: { cookie: string } }).document.cookie)?.[1] ?? "";
      const response = await fetch("/jobs", {
        method: "POST",
        headers: { "content-type": "application/json", "x-csrf-token": token },
        body: JSON.stringify({ type: "transcode", inputs: { source }, params: { preset: "slow", crf: 20 } }),
      });
      return ((await response.json()) as { data: { id: string } }).data.id;
    }, media.url("clip.mp4"));

    // The list: the running job's row gets a progress bar whose percent moves.
    await page.goto("/app/jobs");
    const row = page.getByRole("row").filter({ hasText: jobId });
    const listBar = row.getByTestId("job-progress");
    await waitFor(async () => Number((await listBar.getAttribute("data-percent", { timeout: 240_000 })) || 0) > 0 || undefined, { timeoutMs: 240_000, intervalMs: 250, what: "a percent in the jobs list" });
    await screenshot(page, "job-progress-list");

    // The job page: the bar with percent and time left, then the completed job without it.
    await page.goto(`/app/jobs/${jobId}`);
    const bar = page.getByTestId("job-progress");
    const first = await waitFor(async () => {
      const value = Number((await bar.getAttribute("data-percent").catch(() => "")) || 0);
      return value > 0 ? value : undefined;
    }, { timeoutMs: 120_000, intervalMs: 250, what: "a percent on the job page" });
    expect(await page.getByRole("progressbar", { name: `Progress of ${jobId}` }).count()).toBe(1);
    await screenshot(page, "job-progress-detail");
    const later = await waitFor(async () => {
      if ((await page.locator('[data-status="completed"]').count()) > 0) return 100;
      const value = Number((await bar.getAttribute("data-percent", { timeout: 1_000 }).catch(() => "")) || 0);
      return value > first ? value : undefined;
    }, { timeoutMs: 240_000, intervalMs: 250, what: "the bar to move" });
    expect(later).toBeGreaterThan(first);
    await page.locator('[data-status="completed"]').first().waitFor({ timeout: 240_000 });
    expect(await page.getByTestId("job-progress").count()).toBe(0);
    expect(problems).toEqual([]);
    await context.close();
  }, 600_000);

  it("the SDK's watchJob yields progress readings and the CLI's --wait draws a progress bar", async () => {
    const { key } = await createOrg(system.env, "pro", "Progress clients");
    const params = { preset: "slow", crf: 20 };
    // The CLI as a user runs it (no terminal: a line per status change and per tenth of the way).
    const configDir = mkdtempSync(join(tmpdir(), "rb-progress-cli-"));
    const env = { ...Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("RENDERBUS_"))), RENDERBUS_CONFIG: join(configDir, "config.json") };
    const cli = (...args: string[]) =>
      new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
        const child = spawn(process.execPath, [join(repoRoot, "packages/sdk/bin/renderbus.js"), ...args], { env, stdio: ["ignore", "pipe", "pipe"] });
        let stdout = "";
        let stderr = "";
        child.stdout.on("data", (chunk) => (stdout += chunk));
        child.stderr.on("data", (chunk) => (stderr += chunk));
        child.on("close", (code) => done({ code, stdout, stderr }));
      });
    expect((await cli("login", "--api-key", key, "--base-url", system.gatewayUrl)).code).toBe(0);
    const cliRun = cli("jobs", "submit", "transcode", "-i", `source=${media.url("clip.mp4")}`, "--params", JSON.stringify(params), "--wait", "--timeout", "600");

    const client = new RenderbusClient({ apiKey: key, baseUrl: system.gatewayUrl });
    const submitted = await client.jobs.submit({ type: "transcode", inputs: { source: media.url("clip.mp4") }, params });
    const seen: Job[] = [];
    for await (const job of client.jobs.watch(submitted.id, { timeoutMs: 600_000 })) seen.push(job);
    const readings = seen.filter((job) => job.status === "running" && typeof job.progress?.percent === "number").map((job) => job.progress!);
    expect(readings.length).toBeGreaterThanOrEqual(2);
    for (let i = 1; i < readings.length; i++) expect(readings[i]!.updatedAt).toBeGreaterThan(readings[i - 1]!.updatedAt);
    expect(seen.at(-1)).toMatchObject({ status: "completed", progress: { percent: 100, etaMs: 0 } });

    const { code, stderr } = await cliRun;
    expect(code).toBe(0);
    const bars = stderr.split("\n").filter((line) => /running {2}\[[█░]+\] \d+\.\d%/.test(line));
    expect(bars.length).toBeGreaterThanOrEqual(1);
    expect(stderr).toMatch(/completed/);
  }, 900_000);
});
