import path from "node:path";
import type { TranscodeParams } from "@renderbus/job-types";
import { inputError } from "../job-failure.js";
import type { Provider } from "./provider.js";
import { capOutputDuration, scaleFilter } from "./provider.js";
import { runFfmpeg } from "./run-ffmpeg.js";

const CONTENT_TYPES: Record<TranscodeParams["format"], string> = {
  mp4: "video/mp4",
  webm: "video/webm",
  mkv: "video/x-matroska",
  mov: "video/quicktime",
};

// x264/x265 presets mapped onto the speed knobs of the other encoders (0 = slowest ... 8 = fastest).
const SPEED: Record<TranscodeParams["preset"], number> = {
  veryslow: 0, slower: 1, slow: 2, medium: 3, fast: 4, faster: 5, veryfast: 6, superfast: 7, ultrafast: 8,
};

function videoCodecArgs(params: TranscodeParams): string[] {
  switch (params.codec) {
    case "h264":
      return ["-c:v", "libx264", "-preset", params.preset, "-crf", String(params.crf), "-pix_fmt", "yuv420p"];
    case "h265":
      // hvc1 makes Apple players accept HEVC in mp4/mov.
      return ["-c:v", "libx265", "-preset", params.preset, "-crf", String(params.crf), "-pix_fmt", "yuv420p", "-tag:v", "hvc1", "-x265-params", "log-level=error"];
    case "vp9":
      return ["-c:v", "libvpx-vp9", "-crf", String(params.crf), "-b:v", "0", "-deadline", "good", "-cpu-used", String(Math.min(SPEED[params.preset], 5)), "-row-mt", "1", "-pix_fmt", "yuv420p"];
    case "av1":
      return ["-c:v", "libsvtav1", "-crf", String(params.crf), "-preset", String(4 + SPEED[params.preset]), "-pix_fmt", "yuv420p"];
  }
}

/** The ffmpeg arguments of a transcode (pure: tested without running ffmpeg). */
export function buildTranscodeArgs(params: TranscodeParams, source: string, output: string): string[] {
  const filters = [scaleFilter(params.width, params.height), params.fps ? `fps=${params.fps}` : undefined].filter(Boolean);
  const audioCodec = params.format === "webm" ? "libopus" : "aac";
  return [
    "-i", source,
    "-map", "0:v:0", "-map", "0:a:0?",
    ...(filters.length ? ["-vf", filters.join(",")] : []),
    ...videoCodecArgs(params),
    "-c:a", audioCodec, "-b:a", `${params.audioBitrate}k`,
    ...(params.format === "mp4" || params.format === "mov" ? ["-movflags", "+faststart"] : []),
    output,
  ];
}

/** `transcode`: re-encodes the source video. */
export const transcodeProvider: Provider<TranscodeParams> = {
  type: "transcode",
  async run({ params, inputs, probes, workDir, timeoutMs, signal, onSpawn, onProgress, maxOutputMs }) {
    if (!probes.source?.hasVideo) throw inputError("inputs.source: has no video stream");
    const output = path.join(workDir, `output.${params.format}`);
    await runFfmpeg({ args: capOutputDuration(buildTranscodeArgs(params, inputs.source!, output), maxOutputMs), workDir, timeoutMs, signal, onSpawn, onProgress });
    return { path: output, extension: params.format, contentType: CONTENT_TYPES[params.format] };
  },
};
