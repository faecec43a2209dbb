import { execFile } from "node:child_process";
import { mkdtemp, rm, stat, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { JobTypeName } from "@renderbus/job-types";
import { readMp4Summary } from "../media/mp4-header.js";
import { probeMedia } from "../media/probe.js";
import { measureOutput } from "./output-metadata.js";

const exec = promisify(execFile);
let dir: string;

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "rb-output-metadata-"));
  await exec("ffmpeg", [
    "-hide_banner", "-loglevel", "error", "-y",
    "-f", "lavfi", "-i", "testsrc=duration=3.3:size=642x362:rate=30",
    "-f", "lavfi", "-i", "sine=frequency=440:duration=3.3",
    "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", path.join(dir, "source.mp4"),
  ]);
}, 60_000);

afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** Real outputs as the providers make them (codecs, containers, with and without faststart, odd sizes, capped lengths). */
const CASES: Array<{ name: string; type: JobTypeName; contentType: string; args: string[] }> = [
  { name: "h264.mp4", type: "transcode", contentType: "video/mp4", args: ["-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-movflags", "+faststart"] },
  { name: "h264-capped.mp4", type: "transcode", contentType: "video/mp4", args: ["-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac", "-t", "2.345"] },
  { name: "scaled-video-only.mp4", type: "transcode", contentType: "video/mp4", args: ["-an", "-vf", "scale=-2:102,setsar=4/3", "-c:v", "libx264", "-preset", "ultrafast"] },
  { name: "h265.mov", type: "transcode", contentType: "video/quicktime", args: ["-c:v", "libx265", "-preset", "ultrafast", "-tag:v", "hvc1", "-x265-params", "log-level=error", "-c:a", "aac", "-movflags", "+faststart"] },
  { name: "vp9.mp4", type: "transcode", contentType: "video/mp4", args: ["-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-vf", "fps=12", "-c:a", "aac"] },
  { name: "watermark-like.mp4", type: "watermark.add", contentType: "video/mp4", args: ["-vf", "scale=320:-2,format=yuv420p", "-c:v", "libx264", "-preset", "ultrafast", "-c:a", "aac"] },
  { name: "audio.m4a", type: "audio.extract", contentType: "audio/mp4", args: ["-vn", "-c:a", "aac", "-b:a", "96k"] },
  { name: "thumb.jpg", type: "thumbnail", contentType: "image/jpeg", args: ["-frames:v", "1", "-q:v", "2", "-update", "1"] },
  { name: "thumb.png", type: "thumbnail", contentType: "image/png", args: ["-frames:v", "1", "-vf", "scale=333:-2", "-update", "1"] },
  { name: "thumb.webp", type: "thumbnail", contentType: "image/webp", args: ["-frames:v", "1", "-c:v", "libwebp", "-quality", "85", "-update", "1"] },
];

describe("output metadata read without ffprobe", () => {
  it.each(CASES)("$name: the same duration, width and height as ffprobe reports", async ({ name, type, contentType, args }) => {
    const output = path.join(dir, name);
    await exec("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-i", path.join(dir, "source.mp4"), ...args, output]);
    const { size } = await stat(output);
    const measured = await measureOutput(type, { path: output, extension: path.extname(name).slice(1), contentType }, size);
    const probe = await probeMedia(output);
    const kind = type === "audio.extract" ? "audio" : type === "thumbnail" ? "image" : "video";
    expect(measured).toEqual({
      durationMs: kind === "image" ? null : probe.durationMs,
      width: kind === "audio" ? null : probe.width,
      height: kind === "audio" ? null : probe.height,
      fileSize: size,
    });
    if (contentType !== "image/jpeg" && contentType !== "image/png" && contentType !== "image/webp") {
      // Read from the movie header, not by the ffprobe fallback.
      expect(await readMp4Summary(output)).not.toBeNull();
    }
  }, 60_000);

  it("falls back to ffprobe for what the header reader does not read (webm, a fragmented mp4, mislabelled files)", async () => {
    const webm = path.join(dir, "out.webm");
    await exec("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-i", path.join(dir, "source.mp4"), "-c:v", "libvpx-vp9", "-deadline", "realtime", "-cpu-used", "8", "-c:a", "libopus", webm]);
    const fragmented = path.join(dir, "fragmented.mp4");
    await exec("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", "-i", path.join(dir, "source.mp4"), "-c", "copy", "-movflags", "frag_keyframe+empty_moov", fragmented]);
    expect(await readMp4Summary(fragmented)).toBeNull();
    for (const [file, contentType] of [[webm, "video/webm"], [fragmented, "video/mp4"], [webm, "video/mp4"]] as const) {
      const { size } = await stat(file);
      const probe = await probeMedia(file);
      expect(await measureOutput("transcode", { path: file, extension: "mp4", contentType }, size)).toEqual({ durationMs: probe.durationMs, width: probe.width, height: probe.height, fileSize: size });
    }
    const notAnImage = path.join(dir, "not-an-image.jpg");
    await writeFile(notAnImage, "junk");
    // What ffprobe makes of it, as before: the header reader does not decide.
    const junk = await probeMedia(notAnImage).then((probe) => ({ width: probe.width, height: probe.height }), () => "not media");
    const measured = await measureOutput("thumbnail", { path: notAnImage, extension: "jpg", contentType: "image/jpeg" }, 4).then((m) => ({ width: m.width, height: m.height }), () => "not media");
    expect(measured).toEqual(junk);
  }, 60_000);
});
