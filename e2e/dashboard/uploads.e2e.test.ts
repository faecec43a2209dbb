import { execFile } from "node:child_process";
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

/** A ~19 MB video (noisy MJPEG compresses badly): three of the dashboard's 8 MB upload requests. */
async function makeLargeVideo(): Promise<string> {
  const path = join(mkdtempSync(join(tmpdir(), "rb-dash-upload-")), "holiday.mov");
  await promisify(execFile)("ffmpeg", ["-v", "error", "-y", "-f", "lavfi", "-i", "testsrc=duration=6:size=640x360:rate=25,noise=alls=60:allf=t", "-c:v", "mjpeg", "-q:v", "2", "-pix_fmt", "yuvj420p", path]);
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
      outputDir: mkdtempSync(join(tmpdir(), "rb-out-")),
      uploadDir: mkdtempSync(join(tmpdir(), "rb-uploads-")),
      env: { MODE: "test" },
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

      // The network goes away while the second 8 MB request is on its way, and comes back 3 s later.
      const patches: { offset: string | undefined; outcome: string }[] = [];
      await context.route("**/uploads/upload_*", async (route) => {
        const request = route.request();
        if (request.method() !== "PATCH") return route.continue();
        const offset = request.headers()["upload-offset"];
        if (patches.length === 1) {
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
      expect(patches[0]).toEqual({ offset: "0", outcome: "sent" });
      expect(patches[1]).toEqual({ offset: String(8 * 1024 * 1024), outcome: "dropped" });
      expect(patches.slice(2).every((patch) => patch.outcome === "sent" && patch.offset !== "0")).toBe(true);
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
