import path from "node:path";
import type { ThumbnailParams } from "@renderbus/job-types";
import { inputError } from "../job-failure.js";
import type { Provider } from "./provider.js";
import { scaleFilter } from "./provider.js";
import { runFfmpeg } from "./run-ffmpeg.js";

const CONTENT_TYPES: Record<ThumbnailParams["format"], string> = { jpg: "image/jpeg", png: "image/png", webp: "image/webp" };

/**
 * The ffmpeg arguments of a thumbnail (pure). Seeking before `-i` is fast and frame-accurate since ffmpeg 2.1. The
 * timestamp is a plain decimal to the millisecond: `String(1e-7)` is "1e-7", which `-ss` refuses.
 */
export function buildThumbnailArgs(params: ThumbnailParams, source: string, output: string): string[] {
  const scale = scaleFilter(params.width, params.height);
  const quality = params.format === "jpg" ? ["-q:v", "2"] : params.format === "webp" ? ["-c:v", "libwebp", "-quality", "85"] : [];
  return ["-ss", params.timestamp.toFixed(3), "-i", source, "-frames:v", "1", ...(scale ? ["-vf", scale] : []), ...quality, "-update", "1", output];
}

/** `thumbnail`: one frame of the source as an image. */
export const thumbnailProvider: Provider<ThumbnailParams> = {
  type: "thumbnail",
  async run({ params, inputs, probes, workDir, timeoutMs, signal, onSpawn }) {
    const probe = probes.source;
    if (!probe?.hasVideo) throw inputError("inputs.source: has no video stream");
    if (probe.durationMs !== null && params.timestamp * 1000 >= probe.durationMs) {
      throw inputError(`params.timestamp: must be before the end of the source (${(probe.durationMs / 1000).toFixed(2)} s)`);
    }
    const output = path.join(workDir, `output.${params.format}`);
    await runFfmpeg({ args: buildThumbnailArgs(params, inputs.source!, output), workDir, timeoutMs, signal, onSpawn });
    return { path: output, extension: params.format, contentType: CONTENT_TYPES[params.format] };
  },
};
