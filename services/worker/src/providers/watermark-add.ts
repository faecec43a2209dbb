import { writeFile } from "node:fs/promises";
import path from "node:path";
import type { WatermarkAddParams, WatermarkPosition } from "@renderbus/job-types";
import { inputError } from "../job-failure.js";
import { capOutputDuration, filterGraphPath, type Provider } from "./provider.js";
import { runFfmpeg } from "./run-ffmpeg.js";

/** x/y expressions for an anchor, given the names ffmpeg uses for the frame and the mark sizes in that filter. */
export function anchorExpressions(position: WatermarkPosition, padding: number, names: { frameW: string; frameH: string; markW: string; markH: string }): { x: string; y: string } {
  const [vertical, horizontal] = position === "center" ? ["center", "center"] : position.split("-") as [string, string];
  const { frameW, frameH, markW, markH } = names;
  const x = horizontal === "left" ? `${padding}` : horizontal === "right" ? `${frameW}-${markW}-${padding}` : `(${frameW}-${markW})/2`;
  const y = vertical === "top" ? `${padding}` : vertical === "bottom" ? `${frameH}-${markH}-${padding}` : `(${frameH}-${markH})/2`;
  return { x, y };
}

export interface WatermarkSources {
  source: string;
  /** Local path of the image input, when given. */
  image?: string;
  /** File holding the text (drawtext reads it, which avoids escaping user text into the filter graph). */
  textFile?: string;
  /** Source video size, for sizing the mark relative to it. */
  videoWidth: number;
  videoHeight: number;
}

/**
 * The ffmpeg arguments of a watermark (pure). An image is scaled to `scale` x the video width; text is drawn
 * `scale` x the video height tall (literally: `%` and `\` are not special); both fade to `opacity`.
 */
export function buildWatermarkArgs(params: WatermarkAddParams, sources: WatermarkSources, output: string): string[] {
  const filters: string[] = [];
  let current = "[0:v]";
  if (sources.image) {
    const markWidth = Math.max(2, Math.round((sources.videoWidth * params.scale) / 2) * 2);
    const { x, y } = anchorExpressions(params.position, params.padding, { frameW: "main_w", frameH: "main_h", markW: "overlay_w", markH: "overlay_h" });
    filters.push(`[1:v]scale=${markWidth}:-1,format=rgba,colorchannelmixer=aa=${params.opacity}[mark]`);
    filters.push(`${current}[mark]overlay=x=${x}:y=${y}:format=auto[marked]`);
    current = "[marked]";
  }
  if (sources.textFile) {
    const fontSize = Math.max(8, Math.round(sources.videoHeight * params.scale));
    const { x, y } = anchorExpressions(params.position, params.padding, { frameW: "w", frameH: "h", markW: "text_w", markH: "text_h" });
    const textFile = filterGraphPath(sources.textFile);
    // `expansion=none`: the text is drawn as written. drawtext's default expands `%{...}` (`%{e:while(1,1)}` spins a
    // core per frame, `%{localtime}` reads the worker's clock) and draws nothing at all for a stray `%` (`50% off`).
    filters.push(
      `${current}drawtext=textfile='${textFile}':expansion=none:font=Sans:fontsize=${fontSize}:fontcolor=white@${params.opacity}:borderw=2:bordercolor=black@${params.opacity}:x=${x}:y=${y}[texted]`,
    );
    current = "[texted]";
  }
  filters.push(`${current}format=yuv420p[out]`);
  return [
    "-i", sources.source,
    ...(sources.image ? ["-i", sources.image] : []),
    "-filter_complex", filters.join(";"),
    "-map", "[out]", "-map", "0:a:0?",
    "-c:v", "libx264", "-preset", "veryfast", "-crf", "23",
    "-c:a", "aac", "-b:a", "128k",
    "-movflags", "+faststart",
    output,
  ];
}

/** `watermark.add`: overlays a text and/or an image on the source video; mp4 out. */
export const watermarkAddProvider: Provider<WatermarkAddParams> = {
  type: "watermark.add",
  async run({ params, inputs, probes, workDir, timeoutMs, signal, onSpawn, onProgress, maxOutputMs }) {
    const probe = probes.source;
    if (!probe?.hasVideo || !probe.width || !probe.height) throw inputError("inputs.source: has no video stream");
    if (params.text === undefined && !inputs.image) throw inputError("params.text: is required when no image input is given");
    if (inputs.image && !probes.image?.hasVideo) throw inputError("inputs.image: is not an image");
    let textFile: string | undefined;
    if (params.text !== undefined) {
      textFile = path.join(workDir, "watermark.txt");
      await writeFile(textFile, params.text);
    }
    const output = path.join(workDir, "output.mp4");
    const args = buildWatermarkArgs(params, { source: inputs.source!, image: inputs.image, textFile, videoWidth: probe.width, videoHeight: probe.height }, output);
    await runFfmpeg({ args: capOutputDuration(args, maxOutputMs), workDir, timeoutMs, signal, onSpawn, onProgress });
    return { path: output, extension: "mp4", contentType: "video/mp4" };
  },
};
