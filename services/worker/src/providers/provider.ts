import type { JobTypeName } from "@renderbus/job-types";
import type { MediaProbe } from "../media/probe.js";
import type { FfmpegProgressTick } from "./ffmpeg-progress.js";

/** What a provider gets to work with: validated params, downloaded inputs and their probes, a private temp dir. */
export interface ProviderContext<Params> {
  params: Params;
  /** Local paths of the downloaded inputs, by input name. */
  inputs: Record<string, string>;
  /** Summaries of the media inputs, by input name (ffprobe's, or a movie header's: MediaProbe.readBy). */
  probes: Record<string, MediaProbe>;
  workDir: string;
  /** The plan's maximum run time. */
  timeoutMs: number;
  /** Aborted when the job is cancelled. */
  signal: AbortSignal;
  onSpawn?: (pid: number) => void;
  /** ffmpeg's progress ticks, for providers whose output has a length (video and audio); images report none. */
  onProgress?: (tick: FfmpegProgressTick) => void;
  /**
   * The longest output the job's credit reservation pays for; providers of video and audio pass their ffmpeg
   * arguments through {@link capOutputDuration}. Undefined or null: no cap (images, metadata).
   */
  maxOutputMs?: number | null;
}

/** The file a provider produced. */
export interface ProviderOutput {
  path: string;
  extension: string;
  contentType: string;
  /** Result metadata the provider knows better than a probe of the output (QR sizes, metadata jobs). */
  metadata?: { durationMs?: number | null; width?: number | null; height?: number | null };
}

/** One job type's implementation. */
export interface Provider<Params = Record<string, unknown>> {
  type: JobTypeName;
  /**
   * The provider's output is ffprobe's description of its source (codecs, bit rates, tags): its inputs are always
   * probed with ffprobe. Others get a probe read from an MP4/MOV header when one is read that way (media/header-probe.ts).
   */
  describesInputs?: true;
  run(context: ProviderContext<Params>): Promise<ProviderOutput>;
}

/** An ffmpeg `scale` filter for optional width/height: both given is exact, one keeps the aspect ratio. */
export function scaleFilter(width: number | undefined, height: number | undefined): string | undefined {
  if (width === undefined && height === undefined) return undefined;
  return `scale=${width ?? -2}:${height ?? -2}`;
}

/**
 * A file path for use inside an ffmpeg filter graph. Filter graphs have two nested levels of escaping; rather than
 * get them right for any path, the worker only ever passes paths it made itself (under its temp dir), and this
 * refuses anything else.
 */
export function filterGraphPath(filePath: string): string {
  if (!/^[A-Za-z0-9_./-]+$/.test(filePath)) throw new Error(`path not usable in a filter graph: ${filePath}`);
  return filePath;
}

/**
 * Stops ffmpeg's output at `maxOutputMs` (`-t`, an output option, so it goes just before the output path, which is
 * always the last argument): whatever a source's container claims, the output is never longer than what the job's
 * reservation covers. Pure.
 */
export function capOutputDuration(args: string[], maxOutputMs: number | null | undefined): string[] {
  if (maxOutputMs === null || maxOutputMs === undefined) return args;
  if (!Number.isFinite(maxOutputMs) || maxOutputMs <= 0) throw new Error(`not an output duration: ${maxOutputMs}`);
  return [...args.slice(0, -1), "-t", (maxOutputMs / 1000).toFixed(3), ...args.slice(-1)];
}
