import path from "node:path";
import type { CaptionBurnParams } from "@renderbus/job-types";
import { inputError } from "../job-failure.js";
import { capOutputDuration, filterGraphPath, type Provider } from "./provider.js";
import { runFfmpeg } from "./run-ffmpeg.js";

// ASS alignment uses numpad positions: 2 bottom centre, 5 middle centre, 8 top centre.
const ALIGNMENT: Record<CaptionBurnParams["position"], number> = { bottom: 2, center: 5, top: 8 };

/** The ffmpeg arguments that burn subtitles into a video with libass (pure). */
export function buildCaptionBurnArgs(params: CaptionBurnParams, source: string, subtitles: string, output: string): string[] {
  const file = filterGraphPath(subtitles);
  const style = `FontSize=${params.fontSize},Alignment=${ALIGNMENT[params.position]},MarginV=20`;
  return [
    "-i", source,
    "-map", "0:v:0", "-map", "0:a:0?",
    "-vf", `subtitles=filename='${file}':force_style='${style}',format=yuv420p`,
    "-c:v", "libx264", "-preset", "veryfast", "-crf", "23",
    "-c:a", "aac", "-b:a", "128k",
    "-movflags", "+faststart",
    output,
  ];
}

/** `caption.burn`: renders SRT or WebVTT subtitles onto the source video; mp4 out. */
export const captionBurnProvider: Provider<CaptionBurnParams> = {
  type: "caption.burn",
  async run({ params, inputs, probes, workDir, timeoutMs, signal, onSpawn, onProgress, maxOutputMs }) {
    if (!probes.source?.hasVideo) throw inputError("inputs.source: has no video stream");
    if (!probes.subtitles?.streams.some((stream) => stream.type === "subtitle")) {
      throw inputError("inputs.subtitles: is not an SRT or WebVTT file");
    }
    const output = path.join(workDir, "output.mp4");
    await runFfmpeg({ args: capOutputDuration(buildCaptionBurnArgs(params, inputs.source!, inputs.subtitles!, output), maxOutputMs), workDir, timeoutMs, signal, onSpawn, onProgress });
    return { path: output, extension: "mp4", contentType: "video/mp4" };
  },
};
