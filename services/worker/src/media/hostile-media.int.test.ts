import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { deflateSync } from "node:zlib";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import type { JobTypeName } from "@renderbus/job-types";
import { createInputAgent } from "../fetch-input/guarded-agent.js";
import { JobFailure } from "../job-failure.js";
import { inputProbeFor } from "../providers/index.js";
import { runFfmpeg } from "../providers/run-ffmpeg.js";
import { downloadInputs } from "../run-job/download-inputs.js";
import { runProvider } from "../run-job/run-provider.js";
import { sandboxCommand, sandboxSettings } from "../sandbox/sandbox.js";
import { createTestMedia, serveFiles } from "../testing/test-media.js";
import { configureMediaCaps, DEFAULT_MEDIA_CAPS } from "./media-caps.js";
import { probeMedia } from "./probe.js";

const exec = promisify(execFile);
const agent = createInputAgent({ allowPrivateAddresses: true, connectTimeoutMs: 5000 });
let mediaDir: string;
/** Stands for another tenant's files on the worker's disk (the output store, another job's directory). */
let otherTenantDir: string;
let server: { url: string; close(): Promise<void> };
const workDirs: string[] = [];

/** A PNG whose header claims `width` x `height` RGB pixels; a decoder that trusts it allocates width x height x 3 bytes. */
function pngClaiming(width: number, height: number): Buffer {
  const crcTable = Array.from({ length: 256 }, (_, n) => {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    return c >>> 0;
  });
  const crc = (bytes: Buffer) => {
    let c = 0xffffffff;
    for (const byte of bytes) c = crcTable[(c ^ byte) & 0xff]! ^ (c >>> 8);
    return (c ^ 0xffffffff) >>> 0;
  };
  const chunk = (type: string, data: Buffer) => {
    const body = Buffer.concat([Buffer.from(type, "ascii"), data]);
    const length = Buffer.alloc(4);
    length.writeUInt32BE(data.length);
    const sum = Buffer.alloc(4);
    sum.writeUInt32BE(crc(body));
    return Buffer.concat([length, body, sum]);
  };
  const header = Buffer.alloc(13);
  header.writeUInt32BE(width, 0);
  header.writeUInt32BE(height, 4);
  header[8] = 8; // bit depth
  header[9] = 2; // RGB
  const someRows = deflateSync(Buffer.alloc((width * 3 + 1) * 16));
  return Buffer.concat([Buffer.from([0x89, 0x50, 0x4e, 0x47, 0x0d, 0x0a, 0x1a, 0x0a]), chunk("IHDR", header), chunk("IDAT", someRows), chunk("IEND", Buffer.alloc(0))]);
}

beforeAll(async () => {
  mediaDir = await mkdtemp(path.join(tmpdir(), "rb-hostile-media-"));
  otherTenantDir = await mkdtemp(path.join(tmpdir(), "rb-other-tenant-"));
  await createTestMedia(mediaDir);
  const ffmpeg = (args: string[]) => exec("ffmpeg", ["-hide_banner", "-loglevel", "error", "-y", ...args]);
  await Promise.all([
    // Another tenant's output, as an HLS segment a playlist can name by absolute path.
    ffmpeg(["-i", path.join(mediaDir, "video.mp4"), "-c", "copy", "-f", "mpegts", path.join(otherTenantDir, "output.ts")]),
    // 240 frames per second, small and short.
    ffmpeg(["-f", "lavfi", "-i", "testsrc=duration=1:size=160x90:rate=240", "-c:v", "libx264", "-preset", "ultrafast", path.join(mediaDir, "fast.mp4")]),
  ]);
  await mkdir(path.join(otherTenantDir, "job"), { recursive: true });
  const segment = path.join(otherTenantDir, "output.ts");
  // No extension: ffprobe picks the demuxer by content, as it would for an upload named anything.
  await writeFile(path.join(mediaDir, "playlist"), `#EXTM3U\n#EXT-X-VERSION:3\n#EXT-X-TARGETDURATION:3\n#EXTINF:3.0,\n${segment}\n#EXT-X-ENDLIST\n`);
  await writeFile(path.join(mediaDir, "concat"), `ffconcat version 1.0\nfile ${segment}\n`);
  // 16000 x 16000: within ffmpeg's own size check, 768 MB per decoded frame (ffprobe alone used 800 MB RSS on it).
  await writeFile(path.join(mediaDir, "huge.png"), pngClaiming(16000, 16000));
  // Past ffmpeg's own size limit: refused as "invalid", which is over the cap too.
  await writeFile(path.join(mediaDir, "huger.png"), pngClaiming(30000, 30000));
  server = await serveFiles(mediaDir);
}, 120_000);

afterEach(() => configureMediaCaps({ ...DEFAULT_MEDIA_CAPS }));

afterAll(async () => {
  await server.close();
  await agent.close();
  await Promise.all([mediaDir, otherTenantDir, ...workDirs].map((dir) => rm(dir, { recursive: true, force: true })));
});

async function newWorkDir(): Promise<string> {
  const workDir = await mkdtemp(path.join(tmpdir(), "rb-job-"));
  workDirs.push(workDir);
  return workDir;
}

/** Downloads the named files over HTTP and runs a job type's provider on them, as the worker does. */
async function run(type: JobTypeName, params: Record<string, unknown>, files: Record<string, string>) {
  const workDir = await newWorkDir();
  const urls = Object.fromEntries(Object.entries(files).map(([name, file]) => [name, `${server.url}/files/${file}`]));
  const signal = new AbortController().signal;
  const { inputs, probes } = await downloadInputs({ urls, workDir, maxBytes: 50 * 1024 * 1024, timeoutMs: 10_000, agent, signal, probe: inputProbeFor(type) });
  return runProvider(type, { params, inputs, probes, workDir, timeoutMs: 60_000, signal });
}

async function failureOf(promise: Promise<unknown>): Promise<JobFailure> {
  const error = await promise.then(() => undefined, (thrown: unknown) => thrown);
  expect(error).toBeInstanceOf(JobFailure);
  return error as JobFailure;
}

describe("hostile media", () => {
  it("a playlist naming another tenant's file by absolute path fails with INPUT_ERROR and reads nothing outside the job", async () => {
    // The primitive (finding 6): unguarded, ffprobe follows the playlist to the other tenant's file.
    const unguarded = await exec("ffprobe", ["-v", "error", "-show_entries", "format=format_name,duration", "-of", "json", path.join(mediaDir, "playlist")]);
    expect(JSON.parse(unguarded.stdout)).toMatchObject({ format: { format_name: "hls" } });

    for (const playlist of ["playlist", "concat"]) {
      const failure = await failureOf(run("transcode", {}, { source: playlist }));
      expect(failure).toMatchObject({ code: "INPUT_ERROR", message: "inputs.source: is not a media file that can be read" });
    }
    // ffmpeg itself, had a playlist got past the probe: refused by the demuxer whitelist, no output.
    const workDir = await newWorkDir();
    await exec("cp", [path.join(mediaDir, "playlist"), path.join(workDir, "input-source")]);
    const output = path.join(workDir, "output.mp4");
    const failure = await failureOf(runFfmpeg({ args: ["-i", path.join(workDir, "input-source"), "-c", "copy", output], workDir, timeoutMs: 30_000, signal: new AbortController().signal }));
    expect(failure.code).toBe("PROVIDER_ERROR");
    expect(existsSync(output)).toBe(false);
    // And the sandbox alone, with every demuxer allowed: the other tenant's file is not there to open.
    const wrapped = sandboxCommand("ffprobe", ["-v", "error", "-show_entries", "format=duration", "-of", "json", path.join(workDir, "input-source")], {
      workDir,
      limits: { cpuSeconds: 30, fileSizeBytes: 1 },
      settings: { ...sandboxSettings(), mode: "bwrap" },
    });
    const sandboxed = await exec(wrapped.command, wrapped.args, { env: wrapped.env }).then(() => "opened", (error: { stderr: string }) => error.stderr);
    expect(sandboxed).toMatch(/No such file or directory|Invalid data|Input\/output error/);
  });

  it("an image whose header claims 16000x16000 fails with INPUT_ERROR naming MEDIA_MAX_PIXELS while a normal job beside it completes", async () => {
    const [hostile, hostileMark, hugest, normal] = await Promise.allSettled([
      run("thumbnail", {}, { source: "huge.png" }),
      run("watermark.add", { text: "x" }, { source: "video.mp4", image: "huge.png" }),
      run("thumbnail", {}, { source: "huger.png" }),
      run("transcode", { width: 320, preset: "ultrafast" }, { source: "video.mp4" }),
    ]);
    for (const result of [hostile, hostileMark]) {
      expect(result.status).toBe("rejected");
      const failure = (result as PromiseRejectedResult).reason as JobFailure;
      expect(failure).toBeInstanceOf(JobFailure);
      expect(failure.code).toBe("INPUT_ERROR");
      expect(failure.message).toMatch(/^inputs\.(source|image): a 16000x16000 picture .*MEDIA_MAX_PIXELS/);
    }
    expect((hugest as PromiseRejectedResult).reason).toMatchObject({ code: "INPUT_ERROR", message: expect.stringMatching(/30000x30000.*MEDIA_MAX_PIXELS/) });
    expect(normal.status).toBe("fulfilled");
    const probe = await probeMedia((normal as PromiseFulfilledResult<{ path: string }>).value.path);
    expect([probe.width, probe.height]).toEqual([320, 180]);
  });

  it("a video over the frame rate cap fails with INPUT_ERROR naming MEDIA_MAX_FPS", async () => {
    const failure = await failureOf(run("transcode", {}, { source: "fast.mp4" }));
    expect(failure).toMatchObject({ code: "INPUT_ERROR" });
    expect(failure.message).toMatch(/^inputs\.source: .*240 fps.*MEDIA_MAX_FPS/);
  });

  it("an output reaching OUTPUT_MAX_BYTES fails the job with INPUT_ERROR naming the cap", async () => {
    configureMediaCaps({ ...DEFAULT_MEDIA_CAPS, outputMaxBytes: 20_000 });
    const failure = await failureOf(run("transcode", { crf: 0, preset: "ultrafast" }, { source: "video.mp4" }));
    expect(failure).toMatchObject({ code: "INPUT_ERROR", message: "the output reached the limit of 20000 bytes (OUTPUT_MAX_BYTES)" });
  });

  it("a decoder meeting a picture over the cap after the probe stops with INPUT_ERROR naming MEDIA_MAX_PIXELS", async () => {
    const workDir = await newWorkDir();
    await exec("cp", [path.join(mediaDir, "video.mp4"), path.join(workDir, "input-source.mp4")]);
    const failure = await failureOf(runFfmpeg({
      args: ["-i", path.join(workDir, "input-source.mp4"), "-f", "null", "-"],
      workDir,
      timeoutMs: 30_000,
      signal: new AbortController().signal,
      caps: { ...DEFAULT_MEDIA_CAPS, maxPixels: 100_000 },
    }));
    expect(failure).toMatchObject({ code: "INPUT_ERROR" });
    expect(failure.message).toMatch(/640x360.*MEDIA_MAX_PIXELS/);
  });
});
