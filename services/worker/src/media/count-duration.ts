import { execFile } from "node:child_process";
import path from "node:path";
import { cpuSecondsFor, sandboxCommand, sandboxSettings, type SandboxSettings } from "../sandbox/sandbox.js";
import { inputOptions, isPlainMediaPath } from "./input-options.js";
import { mediaCaps, type MediaCaps } from "./media-caps.js";

interface RawCount {
  streams?: Array<{ nb_read_packets?: string; avg_frame_rate?: string; r_frame_rate?: string }>;
}

const rate = (ratio: string | undefined): number | null => {
  const [numerator, denominator] = (ratio ?? "").split("/").map(Number);
  return numerator && denominator && numerator > 0 && denominator > 0 ? numerator / denominator : null;
};

/**
 * The length of the first video stream from ffprobe's packet count (pure): packets (one per frame) over the frame
 * rate. Null when either is missing.
 */
export function durationFromCount(raw: RawCount): number | null {
  const stream = raw.streams?.[0];
  const packets = Number(stream?.nb_read_packets);
  const fps = rate(stream?.avg_frame_rate) ?? rate(stream?.r_frame_rate);
  if (!Number.isInteger(packets) || packets <= 0 || fps === null) return null;
  return Math.ceil((packets / fps) * 1000);
}

/**
 * Measures how long the first video stream of a file really is, for a source whose container states no duration
 * (a raw H.264 stream): ffprobe demuxes every packet without decoding (`-count_packets`), which costs about a read
 * of the file, and the count over the frame rate is what ffmpeg will produce from it. Runs in the same sandbox and
 * with the same demuxer whitelist as the probe.
 * @returns milliseconds, or null when the file has no countable video stream (or ffprobe fails on it).
 */
export function countVideoDurationMs(filePath: string, options: { timeoutMs: number; sandbox?: SandboxSettings; caps?: MediaCaps }): Promise<number | null> {
  const { timeoutMs, sandbox = sandboxSettings(), caps = mediaCaps() } = options;
  if (!isPlainMediaPath(filePath) || !path.isAbsolute(filePath)) return Promise.resolve(null);
  const wrapped = sandboxCommand(
    "ffprobe",
    [
      "-v", "error", ...inputOptions(caps),
      "-select_streams", "V:0", "-count_packets",
      "-show_entries", "stream=nb_read_packets,avg_frame_rate,r_frame_rate",
      "-print_format", "json", filePath,
    ],
    { workDir: path.dirname(filePath), limits: { cpuSeconds: cpuSecondsFor(timeoutMs), fileSizeBytes: 1 }, settings: sandbox },
  );
  return new Promise((resolve) => {
    execFile(wrapped.command, wrapped.args, { timeout: timeoutMs, maxBuffer: 1024 * 1024, env: wrapped.env }, (error, stdout) => {
      if (error) return resolve(null);
      try {
        resolve(durationFromCount(JSON.parse(stdout) as RawCount));
      } catch {
        resolve(null);
      }
    });
  });
}
