import { execFile } from "node:child_process";
import { appendFile } from "node:fs/promises";
import { mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser } from "playwright-core";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { repoRoot } from "../helpers.js";
import { ensureDashboardBuilt, launchChromium, screenshot, seriousAccessibilityViolations } from "./browser.js";

const LONG = 120_000;

/** The newcomer's file of the issue: 200 MiB, 25 of the dashboard's 8 MB upload requests. */
const FILE_BYTES = 200 * 1024 * 1024;

/**
 * A 200 MiB QuickTime file: 6 s of noisy MJPEG (~19 MB) and, after its `moov`, a top-level `free` atom up to 200 MiB
 * (players and ffmpeg skip it). Every byte is uploaded; the transcode stays a few seconds.
 */
async function makeLargeVideo(): Promise<string> {
  const path = join(mkdtempSync(join(tmpdir(), "rb-dash-upload-")), "holiday.mov");
  await promisify(execFile)("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=duration=6:size=640x360:rate=25,noise=alls=60:allf=t", "-c:v", "mjpeg", "-q:v", "2", "-pix_fmt", "yuvj420p", path]);
  const padding = FILE_BYTES - statSync(path).size;
  const header = Buffer.alloc(8);
  header.writeUInt32BE(padding, 0);
  header.write("free", 4, "latin1");
  await appendFile(path, Buffer.concat([header, Buffer.alloc(padding - 8)]));
  return path;
}

describe("uploading a file on the dashboard's New job page, in a real browser", () => {
  let system: RunningSystem;
  let browser: Browser;
  let video: string;

  beforeAll(async () => {
    const infra = testInfra();
    [video] = await Promise.all([makeLargeVideo(), ensureDashboardBuilt()]);
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("dashuploads"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("dashuploads"),
      // The free plan's inputs are capped at 100 MB: a 200 MB file would be refused (413) before a byte is sent.
      env: { MODE: "test", PLANS_JSON: JSON.stringify({ free: { maxInputBytes: 256 * 1024 * 1024 } }) },
    });
    browser = await launchChromium();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await system?.stop();
  });

  it(
    "uploads a dropped file with a progress bar, resumes after the network drops mid-way, and transcodes it",
    async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, baseURL: system.gatewayUrl });
      context.setDefaultTimeout(60_000);
      const page = await context.newPage();
      const problems: string[] = [];
      page.on("pageerror", (error) => problems.push(error.message));

      await page.goto("/app/");
      await page.getByRole("link", { name: "Create an account" }).click();
      await page.getByLabel("Name").fill("Uma Upload");
      await page.getByLabel("Email").fill(`uma-${Date.now()}@example.com`);
      await page.getByLabel("Password").fill("correct horse battery");
      await page.getByRole("button", { name: "Create account" }).click();
      await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();

      // The network goes away halfway (the first 8 MB request past 100 MiB), and comes back 3 s later.
      const patches: { offset: string | undefined; outcome: string }[] = [];
      await context.route("**/uploads/upload_*", async (route) => {
        const request = route.request();
        if (request.method() !== "PATCH") return route.continue();
        const offset = request.headers()["upload-offset"];
        if (Number(offset) >= FILE_BYTES / 2 && !patches.some((patch) => patch.outcome === "dropped")) {
          patches.push({ offset, outcome: "dropped" });
          await context.setOffline(true);
          setTimeout(() => void context.setOffline(false), 3_000);
          return route.abort("internetdisconnected");
        }
        patches.push({ offset, outcome: "sent" });
        return route.continue();
      });

      await page.getByRole("link", { name: "New job" }).click();
      await page.getByRole("heading", { level: 1, name: "New job" }).waitFor();
      await page.getByLabel("Job type").selectOption("transcode");
      await page.getByLabel("Drop a file here, or choose one").setInputFiles(video);
      await page.getByText("Connection lost at", { exact: false }).waitFor({ timeout: LONG });
      await screenshot(page, "upload-resuming");
      await page.getByText("Uploaded holiday.mov").waitFor({ timeout: LONG });
      const progress = page.getByRole("progressbar", { name: "Upload of holiday.mov" });
      expect(await progress.getAttribute("value")).toBe("100");

      // Resumed where the server was, not from the start: the retried request starts at the dropped one's offset.
      const size = statSync(video).size;
      expect(size).toBe(FILE_BYTES);
      const dropped = patches.findIndex((patch) => patch.outcome === "dropped");
      const halfway = String(Math.ceil(FILE_BYTES / 2 / (8 * 1024 * 1024)) * 8 * 1024 * 1024);
      expect(patches.slice(0, dropped).map((patch) => patch.offset)).toEqual(Array.from({ length: dropped }, (_, index) => String(index * 8 * 1024 * 1024)));
      expect(patches[dropped]).toEqual({ offset: halfway, outcome: "dropped" });
      expect(patches[dropped + 1]).toEqual({ offset: halfway, outcome: "sent" });
      expect(patches.slice(dropped + 1).every((patch) => patch.outcome === "sent" && Number(patch.offset) >= Number(halfway))).toBe(true);
      const uploadId = await page.getByLabel("Source URL or upload").inputValue();
      expect(uploadId).toMatch(/^upload_[0-9A-Z]{26}$/);
      const shown = await page.evaluate(async (id) => ((await (await fetch(`/uploads/${id}`)).json()) as { data: unknown }).data, uploadId);
      expect(shown).toMatchObject({ id: uploadId, size, offset: size, complete: true });
      expect(await seriousAccessibilityViolations(page)).toEqual([]);

      await page.getByLabel("Width").fill("160");
      await page.getByRole("button", { name: "Submit job" }).click();
      await page.waitForURL(/\/app\/jobs\/job_/);
      await page.locator(".status-line [data-status='completed']").waitFor({ timeout: LONG });
      await screenshot(page, "upload-job-completed");
      expect(problems).toEqual([]);
      await context.close();
    },
    300_000,
  );
});
