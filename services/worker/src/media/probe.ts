import { execFile } from "node:child_process";
import path from "node:path";
import { cpuSecondsFor, sandboxCommand, sandboxSettings, type SandboxSettings } from "../sandbox/sandbox.js";
import { inputOptions, isPlainMediaPath } from "./input-options.js";
import { checkMediaCaps, mediaCaps, pixelCapError, pixelCapExceeded, type MediaCaps } from "./media-caps.js";

/** One stream of a probed file, in the shape `extract.metadata` returns. */
export interface ProbedStream {
  index: number;
  type: string;
  codec: string | null;
  width: number | null;
  height: number | null;
  fps: number | null;
  sampleRate: number | null;
  channels: number | null;
  durationMs: number | null;
  bitRate: number | null;
  language: string | null;
}

/** The ffprobe summary of a media file. */
export interface MediaProbe {
  format: { name: string; longName: string | null; durationMs: number | null; size: number | null; bitRate: number | null; tags: Record<string, string> };
  streams: ProbedStream[];
  /** Of the first video stream (null when there is none). */
  width: number | null;
  height: number | null;
  durationMs: number | null;
  hasVideo: boolean;
  hasAudio: boolean;
  /**
   * `ffprobe`: every field as ffprobe reports it. `header`: read from an MP4/MOV movie header or a PNG/JPEG header
   * in-process (media/header-probe.ts, media/picture-probe.ts): the container's duration, the tracks' kinds, sizes and
   * frame rates as ffprobe reports them; codecs (but a picture's), bit rates, sample rates, channels, stream durations
   * (but a picture's), languages and tags are not read there (null or empty). Only job types that use no more than
   * that get a header probe.
   */
  readBy: "ffprobe" | "header";
}

interface RawProbe {
  format?: { format_name?: string; format_long_name?: string; duration?: string; size?: string; bit_rate?: string; tags?: Record<string, string> };
  streams?: Array<{
    index: number; codec_type?: string; codec_name?: string; width?: number; height?: number; avg_frame_rate?: string;
    sample_rate?: string; channels?: number; duration?: string; bit_rate?: string; tags?: Record<string, string>;
    disposition?: { attached_pic?: number };
  }>;
}

const number = (value: string | number | undefined): number | null => {
  const parsed = Number(value);
  return value !== undefined && Number.isFinite(parsed) ? parsed : null;
};
const milliseconds = (seconds: string | undefined): number | null => {
  const parsed = number(seconds);
  return parsed === null ? null : Math.round(parsed * 1000);
};
/** A frame rate as a probe states it: to three decimals (both probes round the same way, so the caps judge alike). */
export const roundFps = (fps: number): number => Math.round(fps * 1000) / 1000;

const frameRate = (ratio: string | undefined): number | null => {
  const [numerator, denominator] = (ratio ?? "").split("/").map(Number);
  if (!numerator || !denominator) return null;
  return roundFps(numerator / denominator);
};

/** Converts ffprobe's JSON into the summary; pure, so it is tested without files. */
export function summarizeProbe(raw: RawProbe): MediaProbe {
  const streams: ProbedStream[] = (raw.streams ?? []).map((stream) => ({
    index: stream.index,
    type: stream.codec_type ?? "unknown",
    codec: stream.codec_name ?? null,
    width: stream.width ?? null,
    height: stream.height ?? null,
    fps: stream.codec_type === "video" ? frameRate(stream.avg_frame_rate) : null,
    sampleRate: number(stream.sample_rate),
    channels: stream.channels ?? null,
    durationMs: milliseconds(stream.duration),
    bitRate: number(stream.bit_rate),
    language: stream.tags?.language ?? null,
  }));
  const video = (raw.streams ?? []).find((stream) => stream.codec_type === "video" && !stream.disposition?.attached_pic);
  const format = raw.format ?? {};
  const durationMs = milliseconds(format.duration) ?? streams.find((stream) => stream.durationMs !== null)?.durationMs ?? null;
  return {
    format: {
      name: format.format_name ?? "unknown",
      longName: format.format_long_name ?? null,
      durationMs,
      size: number(format.size),
      bitRate: number(format.bit_rate),
      tags: format.tags ?? {},
    },
    streams,
    width: video?.width ?? null,
    height: video?.height ?? null,
    durationMs,
    hasVideo: video !== undefined,
    hasAudio: streams.some((stream) => stream.type === "audio"),
    readBy: "ffprobe",
  };
}

/** Thrown when ffprobe cannot read a file as media. */
export class NotMediaError extends Error {
  override readonly name = "NotMediaError";
}

/** How {@link probeMedia} runs; the defaults are the worker's process-wide settings. */
export interface ProbeOptions {
  timeoutMs?: number;
  sandbox?: SandboxSettings;
  caps?: MediaCaps;
}

/**
 * Runs ffprobe on a local file, inside the sandbox with only the file's directory visible, with the demuxer and
 * protocol whitelists, and checks the result against the media caps.
 * @throws NotMediaError when ffprobe fails or finds no streams; MediaCapError (INPUT_ERROR) when a video stream is
 *   over the pixel or frame-rate cap.
 */
export function probeMedia(filePath: string, options: ProbeOptions | number = {}): Promise<MediaProbe> {
  const { timeoutMs = 30_000, sandbox = sandboxSettings(), caps = mediaCaps() } = typeof options === "number" ? { timeoutMs: options } : options;
  if (!isPlainMediaPath(filePath) || !path.isAbsolute(filePath)) return Promise.reject(new NotMediaError("not a path the worker made"));
  const wrapped = sandboxCommand(
    "ffprobe",
    ["-v", "error", ...inputOptions(caps), "-print_format", "json", "-show_format", "-show_streams", filePath],
    // ffprobe writes nothing: a file size limit of one byte.
    { workDir: path.dirname(filePath), limits: { cpuSeconds: cpuSecondsFor(timeoutMs), fileSizeBytes: 1 }, settings: sandbox },
  );
  return new Promise((resolve, reject) => {
    execFile(
      wrapped.command,
      wrapped.args,
      { timeout: timeoutMs, maxBuffer: 16 * 1024 * 1024, env: wrapped.env },
      (error, stdout, stderr) => {
        const oversized = pixelCapExceeded(stderr, caps);
        if (oversized) return reject(pixelCapError(oversized.width, oversized.height, caps));
        if (error) return reject(new NotMediaError("ffprobe could not read the file"));
        let summary: MediaProbe;
        try {
          summary = summarizeProbe(JSON.parse(stdout) as RawProbe);
        } catch {
          return reject(new NotMediaError("ffprobe output was not readable"));
        }
        if (summary.streams.length === 0) return reject(new NotMediaError("no media streams found"));
        try {
          checkMediaCaps(summary.streams, caps);
        } catch (capError) {
          return reject(capError as Error);
        }
        resolve(summary);
      },
    );
  });
}
