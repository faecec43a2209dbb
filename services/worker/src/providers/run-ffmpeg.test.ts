import { execFile } from "node:child_process";
import { readdirSync, readFileSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobCancelledError, JobFailure } from "../job-failure.js";
import { DEFAULT_MEDIA_CAPS } from "../media/media-caps.js";
import { guardedFfmpegArgs, runFfmpeg, summarizeFfmpegError } from "./run-ffmpeg.js";
import { isAlive } from "../testing/processes.js";

let workDir: string;
// A source looped forever in real time: only a kill ends it. (Generated inputs like lavfi are off the demuxer
// whitelist, so the test loops a real file in the job's directory.)
let ENDLESS: string[];

beforeAll(async () => {
  workDir = await mkdtemp(path.join(tmpdir(), "rb-run-ffmpeg-"));
  const clip = path.join(workDir, "clip.mp4");
  await promisify(execFile)("ffmpeg", ["-loglevel", "error", "-f", "lavfi", "-i", "testsrc=duration=1:size=160x90:rate=25", "-c:v", "libx264", "-preset", "ultrafast", clip]);
  ENDLESS = ["-re", "-stream_loop", "-1", "-i", clip, "-f", "null", "-"];
});
afterAll(async () => {
  await rm(workDir, { recursive: true, force: true });
});

/** Pids of ffmpeg processes (inside the sandbox too: same host, other pid namespace) whose command line names `file`. */
function ffmpegProcessesReading(file: string): string[] {
  return readdirSync("/proc").filter((entry) => {
    if (!/^\d+$/.test(entry)) return false;
    try {
      const commandLine = readFileSync(`/proc/${entry}/cmdline`, "utf8");
      return commandLine.startsWith("ffmpeg\0") && commandLine.includes(file);
    } catch {
      return false;
    }
  });
}

describe("runFfmpeg", () => {
  it("reports ffmpeg's -progress stream from inside the sandbox: ticks while it runs, then the end", async () => {
    const clip = path.join(workDir, "clip.mp4");
    const ticks: Array<{ outTimeMs: number | null; ended: boolean }> = [];
    await runFfmpeg({
      args: ["-re", "-i", clip, "-f", "null", "-"],
      workDir,
      timeoutMs: 60_000,
      signal: new AbortController().signal,
      onProgress: ({ outTimeMs, ended }) => ticks.push({ outTimeMs, ended }),
    });
    expect(ticks.length).toBeGreaterThanOrEqual(2);
    expect(ticks.at(-1)).toMatchObject({ ended: true });
    expect(ticks.filter((tick) => tick.ended)).toHaveLength(1);
    expect(ticks.at(-1)!.outTimeMs).toBeGreaterThanOrEqual(900);
  }, 60_000);

  it("kills a running ffmpeg within 2 seconds of a cancel", async () => {
    const controller = new AbortController();
    let pid = 0;
    const run = runFfmpeg({ args: ENDLESS, workDir, timeoutMs: 60_000, signal: controller.signal, onSpawn: (spawned) => { pid = spawned; } });
    await new Promise((resolve) => setTimeout(resolve, 500));
    expect(isAlive(pid)).toBe(true);
    const cancelledAt = Date.now();
    controller.abort();
    await expect(run).rejects.toBeInstanceOf(JobCancelledError);
    expect(Date.now() - cancelledAt).toBeLessThan(2000);
    expect(isAlive(pid)).toBe(false);
    // The spawned process is the sandbox's wrapper; the ffmpeg inside it is gone as well.
    expect(ffmpegProcessesReading(ENDLESS[4]!)).toEqual([]);
  });

  it("fails with PROVIDER_TIMEOUT when the plan's run time is exceeded", async () => {
    const error = await runFfmpeg({ args: ENDLESS, workDir, timeoutMs: 300, signal: new AbortController().signal }).catch((thrown: unknown) => thrown);
    expect(error).toBeInstanceOf(JobFailure);
    expect(error).toMatchObject({ code: "PROVIDER_TIMEOUT", message: "the job exceeded the plan's maximum run time of 0 s" });
  });

  it("fails with PROVIDER_ERROR and the meaningful stderr line on a non-zero exit", async () => {
    const error = await runFfmpeg({ args: ["-i", `${workDir}/no-such-file.mp4`, "-f", "null", "-"], workDir, timeoutMs: 10_000, signal: new AbortController().signal }).catch((thrown: unknown) => thrown);
    expect(error).toMatchObject({ code: "PROVIDER_ERROR" });
    expect((error as Error).message).toContain("No such file or directory");
    expect((error as Error).message).not.toContain(workDir);
  });
});

describe("guardedFfmpegArgs", () => {
  it("puts the protocol and demuxer whitelists and the pixel cap before every input, and -fs before the output", () => {
    const args = guardedFfmpegArgs(["-ss", "1", "-i", "/tmp/job/a.mp4", "-i", "/tmp/job/b.png", "-c:v", "libx264", "/tmp/job/out.mp4"], DEFAULT_MEDIA_CAPS);
    const joined = args.join(" ");
    expect(joined).toMatch(/-ss 1 -protocol_whitelist file,pipe -format_whitelist \S+ -max_pixels 58982400 -i \/tmp\/job\/a\.mp4 -protocol_whitelist/);
    expect(args.filter((arg) => arg === "-format_whitelist")).toHaveLength(2);
    const demuxers = args[args.indexOf("-format_whitelist") + 1]!.split(",");
    expect(demuxers).toEqual(expect.arrayContaining(["mov", "matroska", "h264", "srt", "webvtt", "png_pipe"]));
    for (const opener of ["hls", "concat", "dash", "lavfi", "tee", "data"]) expect(demuxers).not.toContain(opener);
    expect(args.slice(-3)).toEqual(["-fs", String(2 * 1024 ** 3), "/tmp/job/out.mp4"]);
  });

  it("refuses an input path with pattern characters, which image2 would expand", () => {
    for (const input of ["/tmp/job/img%03d.png", "/tmp/job/*.png", "/tmp/job/a b.mp4"]) {
      expect(() => guardedFfmpegArgs(["-i", input, "/tmp/job/out.mp4"], DEFAULT_MEDIA_CAPS)).toThrow(JobFailure);
    }
  });
});

describe("summarizeFfmpegError", () => {
  it("keeps the last informative line without the job's directory or the component address", () => {
    const lines = [
      "[libx264 @ 0x55d0c0a1b2c0] width not divisible by 2 (641x360)",
      "Error initializing output stream 0:0 -- Error while opening encoder for output stream #0:0 - maybe incorrect parameters such as bit_rate, rate, width or height",
      "Conversion failed!",
      "",
    ];
    expect(summarizeFfmpegError(lines, "/tmp/job-1")).toMatch(/^Error initializing output stream 0:0/);
    expect(summarizeFfmpegError(["[h264 @ 0xabc] /tmp/job-1/input-source.mp4: Invalid data found when processing input"], "/tmp/job-1"))
      .toBe("input-source.mp4: Invalid data found when processing input");
    expect(summarizeFfmpegError([], "/tmp/job-1")).toBe("ffmpeg failed");
    expect(summarizeFfmpegError(["x".repeat(1000)], "/tmp/job-1")).toHaveLength(300);
  });
});
