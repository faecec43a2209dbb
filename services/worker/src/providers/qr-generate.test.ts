import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { imageSizeFromFile } from "image-size/fromFile";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobCancelledError, JobFailure } from "../job-failure.js";
import { qrGenerateProvider } from "./qr-generate.js";

let workDir: string;

beforeAll(async () => {
  workDir = await mkdtemp(path.join(tmpdir(), "rb-qr-"));
});

afterAll(async () => {
  await rm(workDir, { recursive: true, force: true });
});

const render = (params: { content: string; format: "png" | "svg"; size: number }, signal = new AbortController().signal) =>
  qrGenerateProvider.run({ params, inputs: {}, probes: {}, workDir, timeoutMs: 60_000, signal });

describe("qr.generate", () => {
  it("renders a 4096 px PNG without blocking the worker's event loop, so other jobs' cancels and progress go on meanwhile", async () => {
    const tickMs = 20;
    let maxLagMs = 0;
    let lastTick = performance.now();
    const ticker = setInterval(() => {
      const now = performance.now();
      maxLagMs = Math.max(maxLagMs, now - lastTick - tickMs);
      lastTick = now;
    }, tickMs);
    const started = performance.now();
    try {
      const output = await render({ content: `https://renderbus.example/${"x".repeat(300)}`, format: "png", size: 4096 });
      const renderMs = performance.now() - started;
      expect(output).toMatchObject({ extension: "png", contentType: "image/png", metadata: { width: 4096, height: 4096 } });
      expect(await imageSizeFromFile(output.path)).toMatchObject({ type: "png", width: 4096, height: 4096 });
      // Not a speed check: rendered on the event loop, the longest lag is about the whole render (2.5-3.7 s here).
      expect(maxLagMs).toBeLessThan(Math.min(500, renderMs / 2));
    } finally {
      clearInterval(ticker);
    }
  });

  it("refuses content beyond a QR code's capacity with INPUT_ERROR", async () => {
    // 2000 two-byte characters: 4000 bytes, past the 2331 a QR code holds at level M.
    const failure = await render({ content: "é".repeat(2000), format: "png", size: 256 }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(JobFailure);
    expect(failure).toMatchObject({ code: "INPUT_ERROR", message: "params.content: is too long to fit in a QR code" });
  });

  it("stops rendering when the job is cancelled", async () => {
    const controller = new AbortController();
    const rendering = render({ content: "cancel me", format: "png", size: 4096 }, controller.signal);
    setTimeout(() => controller.abort(), 50);
    await expect(rendering).rejects.toBeInstanceOf(JobCancelledError);
  });
});
