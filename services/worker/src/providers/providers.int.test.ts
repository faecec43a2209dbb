import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JobTypeName } from "@renderbus/job-types";
import { createInputAgent } from "../fetch-input/guarded-agent.js";
import { JobFailure } from "../job-failure.js";
import { probeMedia } from "../media/probe.js";
import { inputProbeFor } from "./index.js";
import { downloadInputs } from "../run-job/download-inputs.js";
import { runProvider } from "../run-job/run-provider.js";
import { createTestMedia, serveFiles } from "../testing/test-media.js";

let mediaDir: string;
let server: { url: string; close(): Promise<void> };
const agent = createInputAgent({ allowPrivateAddresses: true, connectTimeoutMs: 5000 });
const workDirs: string[] = [];

beforeAll(async () => {
  mediaDir = await mkdtemp(path.join(tmpdir(), "rb-media-"));
  await createTestMedia(mediaDir);
  server = await serveFiles(mediaDir);
}, 120_000);

afterAll(async () => {
  await server.close();
  await agent.close();
  await Promise.all([mediaDir, ...workDirs].map((dir) => rm(dir, { recursive: true, force: true })));
});

/** Downloads the named test files over HTTP and runs a job type's provider on them, as the worker does. */
async function run(type: JobTypeName, params: Record<string, unknown>, files: Record<string, string>) {
  const workDir = await mkdtemp(path.join(tmpdir(), "rb-job-"));
  workDirs.push(workDir);
  const urls = Object.fromEntries(Object.entries(files).map(([name, file]) => [name, `${server.url}/files/${file}`]));
  const signal = new AbortController().signal;
  const { inputs, probes } = await downloadInputs({ urls, workDir, maxBytes: 50 * 1024 * 1024, timeoutMs: 10_000, agent, signal, probe: inputProbeFor(type) });
  const output = await runProvider(type, { params, inputs, probes, workDir, timeoutMs: 60_000, signal });
  return output;
}

/** One frame of a video at `seconds`, cropped (`crop=w:h:x:y`) and as 8-bit gray pixels. */
async function grayPixels(file: string, seconds: number, crop: string): Promise<Buffer> {
  const args = ["-v", "error", "-ss", seconds.toFixed(3), "-i", file, "-frames:v", "1", "-vf", `${crop},format=gray`, "-f", "rawvideo", "-"];
  const { stdout } = await promisify(execFile)("ffmpeg", args, { encoding: "buffer", maxBuffer: 16 * 1024 * 1024 });
  return stdout;
}

/** The mean absolute difference of two same-sized gray images, 0 (identical) to 255. */
function meanDifference(a: Buffer, b: Buffer): number {
  expect(a.length).toBe(b.length);
  let total = 0;
  for (let index = 0; index < a.length; index += 1) total += Math.abs(a[index]! - b[index]!);
  return total / a.length;
}

async function failureOf(promise: Promise<unknown>): Promise<JobFailure> {
  const error = await promise.then(() => undefined, (thrown: unknown) => thrown);
  expect(error).toBeInstanceOf(JobFailure);
  return error as JobFailure;
}

describe("providers (real ffmpeg)", () => {
  it("transcode resizes to the requested width and keeps duration and audio", async () => {
    const output = await run("transcode", { width: 320, crf: 30 }, { source: "video.mp4" });
    expect(output).toMatchObject({ extension: "mp4", contentType: "video/mp4" });
    const probe = await probeMedia(output.path);
    expect(probe.width).toBe(320);
    expect(probe.height).toBe(180);
    expect(probe.durationMs).toBeGreaterThan(2800);
    expect(probe.durationMs).toBeLessThan(3300);
    expect(probe.hasAudio).toBe(true);
    expect(probe.streams.find((stream) => stream.type === "video")?.codec).toBe("h264");
  });

  it("transcode produces vp9 in webm at the requested frame rate", async () => {
    const output = await run("transcode", { codec: "vp9", format: "webm", height: 180, fps: 10, preset: "ultrafast" }, { source: "video.mp4" });
    expect(output.contentType).toBe("video/webm");
    const probe = await probeMedia(output.path);
    expect(probe.format.name).toContain("webm");
    expect(probe.height).toBe(180);
    expect(probe.streams.find((stream) => stream.type === "video")).toMatchObject({ codec: "vp9", fps: 10 });
    expect(probe.streams.find((stream) => stream.type === "audio")?.codec).toBe("opus");
  });

  it.each([
    ["h265", "mkv", "hevc", "matroska"],
    ["av1", "mp4", "av1", "mp4"],
    ["h264", "mov", "h264", "mov"],
  ])("transcode encodes %s into %s", async (codec, format, expectedCodec, expectedFormat) => {
    const output = await run("transcode", { codec, format, width: 160, preset: "ultrafast", crf: 40 }, { source: "video.mp4" });
    const probe = await probeMedia(output.path);
    expect(probe.format.name).toContain(expectedFormat);
    expect(probe.streams.find((stream) => stream.type === "video")?.codec).toBe(expectedCodec);
    expect([probe.width, probe.height]).toEqual([160, 90]);
  });

  it.each([
    ["jpg", "mjpeg"],
    ["webp", "webp"],
  ])("thumbnail writes %s", async (format, codec) => {
    const output = await run("thumbnail", { format }, { source: "video.mp4" });
    const probe = await probeMedia(output.path);
    expect(probe.streams[0]?.codec).toBe(codec);
    expect([probe.width, probe.height]).toEqual([640, 360]);
  });

  it.each([
    ["aac", "aac", "audio/mp4"],
    ["wav", "pcm_s16le", "audio/wav"],
    ["opus", "opus", "audio/ogg"],
  ])("audio.extract writes %s", async (format, codec, contentType) => {
    const output = await run("audio.extract", { format }, { source: "video.mp4" });
    expect(output.contentType).toBe(contentType);
    const probe = await probeMedia(output.path);
    expect(probe.streams[0]?.codec).toBe(codec);
    expect(probe.durationMs).toBeGreaterThan(2800);
  });

  it("thumbnail captures one frame at the requested size and format", async () => {
    const output = await run("thumbnail", { timestamp: 1.5, width: 160, format: "png" }, { source: "video.mp4" });
    expect(output).toMatchObject({ extension: "png", contentType: "image/png" });
    const probe = await probeMedia(output.path);
    expect(probe.streams[0]?.codec).toBe("png");
    expect([probe.width, probe.height]).toEqual([160, 90]);
  });

  it("thumbnail refuses a timestamp after the end of the source with INPUT_ERROR", async () => {
    const failure = await failureOf(run("thumbnail", { timestamp: 10 }, { source: "video.mp4" }));
    expect(failure.code).toBe("INPUT_ERROR");
    expect(failure.message).toMatch(/^params\.timestamp: /);
  });

  it("audio.extract writes an mp3 of the source's audio length", async () => {
    const output = await run("audio.extract", { format: "mp3", bitrate: 96 }, { source: "video.mp4" });
    expect(output).toMatchObject({ extension: "mp3", contentType: "audio/mpeg" });
    const probe = await probeMedia(output.path);
    expect(probe.hasVideo).toBe(false);
    expect(probe.streams[0]?.codec).toBe("mp3");
    expect(probe.durationMs).toBeGreaterThan(2800);
    expect(probe.durationMs).toBeLessThan(3300);
  });

  it("audio.extract fails with INPUT_ERROR when the source has no audio", async () => {
    const failure = await failureOf(run("audio.extract", {}, { source: "logo.png" }));
    expect(failure).toMatchObject({ code: "INPUT_ERROR", message: "inputs.source: has no audio stream" });
  });

  it("extract.metadata returns the ffprobe summary as JSON", async () => {
    const output = await run("extract.metadata", {}, { source: "video.mp4" });
    expect(output.contentType).toBe("application/json");
    const summary = JSON.parse(await readFile(output.path, "utf8")) as { width: number; height: number; durationMs: number; streams: { type: string; codec: string | null }[] };
    expect(summary).toMatchObject({ width: 640, height: 360 });
    expect(summary.streams.map((stream) => stream.type).sort()).toEqual(["audio", "video"]);
    // ffprobe's word, not a movie header's (which reads no codecs): this job type's output is the description.
    expect(summary.streams.map((stream) => stream.codec).sort()).toEqual(["aac", "h264"]);
    expect(output.metadata).toMatchObject({ width: 640, height: 360 });
  });

  it("qr.generate renders a PNG of the requested size and an SVG", async () => {
    const png = await run("qr.generate", { content: "https://renderbus.example", size: 256 }, {});
    const probe = await probeMedia(png.path);
    expect([probe.width, probe.height]).toEqual([256, 256]);
    const svg = await run("qr.generate", { content: "hello", format: "svg", size: 300 }, {});
    expect(svg.contentType).toBe("image/svg+xml");
    expect(await readFile(svg.path, "utf8")).toMatch(/^<svg[^>]*width="300"/);
  });

  it("watermark.add overlays a text and an image and keeps the video's size and length", async () => {
    const output = await run("watermark.add", { text: "Renderbus: 'demo'", position: "top-left", opacity: 0.5 }, { source: "video.mp4", image: "logo.png" });
    expect(output.contentType).toBe("video/mp4");
    const probe = await probeMedia(output.path);
    expect([probe.width, probe.height]).toEqual([640, 360]);
    expect(probe.durationMs).toBeGreaterThan(2800);
  });

  it("watermark.add draws a text with `%` and `%{...}` as written: the marked corner differs from the unmarked source", async () => {
    // With drawtext's default expansion, "50% off" is a stray `%`: ffmpeg logs it and draws no text at all.
    const output = await run("watermark.add", { text: "50% off %{pts}", position: "top-left", opacity: 1, scale: 0.1 }, { source: "video.mp4" });
    const source = path.join(mediaDir, "video.mp4");
    const textCorner = "crop=320:80:0:0";
    const farCorner = "crop=200:80:440:280";
    const marked = meanDifference(await grayPixels(output.path, 1, textCorner), await grayPixels(source, 1, textCorner));
    // The control: where no text is drawn, re-encoding alone changes the pixels this little.
    const untouched = meanDifference(await grayPixels(output.path, 1, farCorner), await grayPixels(source, 1, farCorner));
    expect(untouched).toBeLessThan(4);
    expect(marked).toBeGreaterThan(Math.max(12, untouched * 5));
  });

  it("caption.burn renders SRT and WebVTT subtitles into the video", async () => {
    for (const subtitles of ["subs.srt", "subs.vtt"]) {
      const output = await run("caption.burn", { fontSize: 30, position: "top" }, { source: "video.mp4", subtitles });
      const probe = await probeMedia(output.path);
      expect([probe.width, probe.height]).toEqual([640, 360]);
      expect(probe.durationMs).toBeGreaterThan(2800);
      expect((await stat(output.path)).size).toBeGreaterThan(1000);
    }
  });

  it("a corrupt input fails with INPUT_ERROR, a truncated one with PROVIDER_ERROR or INPUT_ERROR", async () => {
    expect((await failureOf(run("transcode", {}, { source: "corrupt.mp4" }))).code).toBe("INPUT_ERROR");
    const failure = await failureOf(run("transcode", {}, { source: "truncated.mp4" }));
    expect(["PROVIDER_ERROR", "INPUT_ERROR"]).toContain(failure.code);
    expect(failure.message.length).toBeLessThanOrEqual(300);
    expect(failure.message).not.toContain(tmpdir());
  });

  it("an unreachable URL fails with INPUT_ERROR", async () => {
    const failure = await failureOf(run("transcode", {}, { source: "missing.mp4" }));
    expect(failure).toMatchObject({ code: "INPUT_ERROR", message: "inputs.source: could not be fetched (HTTP 404)" });
  });
});
