import { describe, expect, it } from "vitest";
import { parseJobParams, type AudioExtractParams, type CaptionBurnParams, type ThumbnailParams, type TranscodeParams, type WatermarkAddParams } from "@renderbus/job-types";
import { buildAudioExtractArgs } from "./audio-extract.js";
import { buildCaptionBurnArgs } from "./caption-burn.js";
import { qrOptions } from "./qr-generate.js";
import { buildThumbnailArgs } from "./thumbnail.js";
import { buildTranscodeArgs } from "./transcode.js";
import { anchorExpressions, buildWatermarkArgs } from "./watermark-add.js";

function params<T>(type: Parameters<typeof parseJobParams>[0], raw: Record<string, unknown>): T {
  const parsed = parseJobParams(type, raw);
  if (!parsed.ok) throw new Error(parsed.message);
  return parsed.params as T;
}

const valueAfter = (args: string[], flag: string): string | undefined => args[args.indexOf(flag) + 1];

describe("transcode arguments", () => {
  it("encodes h264 with the given crf and preset, keeping the aspect ratio for a width alone", () => {
    const args = buildTranscodeArgs(params<TranscodeParams>("transcode", { width: 1280, crf: 20, preset: "slow" }), "in.mp4", "out.mp4");
    expect(args.slice(0, 2)).toEqual(["-i", "in.mp4"]);
    expect(valueAfter(args, "-vf")).toBe("scale=1280:-2");
    expect(valueAfter(args, "-c:v")).toBe("libx264");
    expect(valueAfter(args, "-crf")).toBe("20");
    expect(valueAfter(args, "-preset")).toBe("slow");
    expect(valueAfter(args, "-b:a")).toBe("128k");
    expect(args).toContain("+faststart");
    expect(args.at(-1)).toBe("out.mp4");
  });

  it("scales to an exact size with a frame rate, and maps the audio only if there is one", () => {
    const args = buildTranscodeArgs(params<TranscodeParams>("transcode", { width: 640, height: 360, fps: 24 }), "in", "out.mp4");
    expect(valueAfter(args, "-vf")).toBe("scale=640:360,fps=24");
    expect(args.join(" ")).toContain("-map 0:v:0 -map 0:a:0?");
  });

  it("uses vp9 with opus for webm and no faststart", () => {
    const args = buildTranscodeArgs(params<TranscodeParams>("transcode", { codec: "vp9", format: "webm", crf: 40, audioBitrate: 96 }), "in", "out.webm");
    expect(valueAfter(args, "-c:v")).toBe("libvpx-vp9");
    expect(valueAfter(args, "-b:v")).toBe("0");
    expect(valueAfter(args, "-c:a")).toBe("libopus");
    expect(valueAfter(args, "-b:a")).toBe("96k");
    expect(args).not.toContain("-movflags");
    expect(args).not.toContain("-vf");
  });

  it("tags h265 as hvc1 and picks SVT-AV1 for av1", () => {
    expect(valueAfter(buildTranscodeArgs(params<TranscodeParams>("transcode", { codec: "h265" }), "in", "out.mp4"), "-tag:v")).toBe("hvc1");
    expect(valueAfter(buildTranscodeArgs(params<TranscodeParams>("transcode", { codec: "av1", format: "mkv" }), "in", "out.mkv"), "-c:v")).toBe("libsvtav1");
  });
});

describe("thumbnail arguments", () => {
  it("seeks before the input and writes one frame", () => {
    const args = buildThumbnailArgs(params<ThumbnailParams>("thumbnail", { timestamp: 12.5, height: 240, format: "webp" }), "in", "out.webp");
    expect(args.slice(0, 4)).toEqual(["-ss", "12.500", "-i", "in"]);
    expect(valueAfter(args, "-frames:v")).toBe("1");
    expect(valueAfter(args, "-vf")).toBe("scale=-2:240");
    expect(valueAfter(args, "-c:v")).toBe("libwebp");
  });

  it("writes the timestamp as a plain decimal, which ffmpeg's -ss accepts (String(1e-7) is \"1e-7\", which it refuses)", () => {
    const seek = (timestamp: number) => valueAfter(buildThumbnailArgs(params<ThumbnailParams>("thumbnail", { timestamp }), "in", "out.jpg"), "-ss");
    expect(seek(1e-7)).toBe("0.000");
    expect(seek(0.0005)).toBe("0.001");
    expect(seek(12.5)).toBe("12.500");
    expect(seek(3600)).toBe("3600.000");
  });
});

describe("audio.extract arguments", () => {
  it("drops video and encodes the first audio track", () => {
    const args = buildAudioExtractArgs(params<AudioExtractParams>("audio.extract", { format: "opus", bitrate: 64 }), "in", "out.opus");
    expect(args).toContain("-vn");
    expect(valueAfter(args, "-map")).toBe("0:a:0");
    expect(valueAfter(args, "-c:a")).toBe("libopus");
    expect(valueAfter(args, "-b:a")).toBe("64k");
  });

  it("writes PCM without a bitrate for wav", () => {
    const args = buildAudioExtractArgs(params<AudioExtractParams>("audio.extract", { format: "wav" }), "in", "out.wav");
    expect(valueAfter(args, "-c:a")).toBe("pcm_s16le");
    expect(args).not.toContain("-b:a");
  });
});

describe("watermark arguments", () => {
  it("places each anchor with the padding", () => {
    const names = { frameW: "W", frameH: "H", markW: "w", markH: "h" };
    expect(anchorExpressions("top-left", 10, names)).toEqual({ x: "10", y: "10" });
    expect(anchorExpressions("bottom-right", 10, names)).toEqual({ x: "W-w-10", y: "H-h-10" });
    expect(anchorExpressions("center", 10, names)).toEqual({ x: "(W-w)/2", y: "(H-h)/2" });
    expect(anchorExpressions("top-center", 0, names)).toEqual({ x: "(W-w)/2", y: "0" });
    expect(anchorExpressions("center-left", 5, names)).toEqual({ x: "5", y: "(H-h)/2" });
  });

  it("scales an image mark to a fraction of the video width with the opacity, then draws the text from a file", () => {
    const watermark = params<WatermarkAddParams>("watermark.add", { text: "hi", scale: 0.25, opacity: 0.5, position: "bottom-left" });
    const args = buildWatermarkArgs(watermark, { source: "in", image: "logo.png", textFile: "/tmp/job/watermark.txt", videoWidth: 640, videoHeight: 360 }, "out.mp4");
    const graph = valueAfter(args, "-filter_complex")!;
    expect(graph).toContain("[1:v]scale=160:-1,format=rgba,colorchannelmixer=aa=0.5[mark]");
    expect(graph).toContain("overlay=x=16:y=main_h-overlay_h-16");
    expect(graph).toContain("drawtext=textfile='/tmp/job/watermark.txt':expansion=none:font=Sans:fontsize=90");
    expect(args.filter((arg) => arg === "-i")).toHaveLength(2);
  });

  it("needs no second input for a text-only mark", () => {
    const args = buildWatermarkArgs(params<WatermarkAddParams>("watermark.add", { text: "hi" }), { source: "in", textFile: "t.txt", videoWidth: 640, videoHeight: 360 }, "out.mp4");
    expect(args.filter((arg) => arg === "-i")).toHaveLength(1);
    expect(valueAfter(args, "-filter_complex")).not.toContain("overlay");
  });

  it("draws the text as written: drawtext's %{...} expansion is off, so `50% off` or `%{e:...}` is never evaluated", () => {
    const args = buildWatermarkArgs(params<WatermarkAddParams>("watermark.add", { text: "50% off %{pts}" }), { source: "in", textFile: "t.txt", videoWidth: 640, videoHeight: 360 }, "out.mp4");
    expect(valueAfter(args, "-filter_complex")).toMatch(/drawtext=textfile='t\.txt':expansion=none:/);
  });
});

describe("caption.burn arguments", () => {
  it("renders subtitles with the font size and alignment", () => {
    const args = buildCaptionBurnArgs(params<CaptionBurnParams>("caption.burn", { fontSize: 30, position: "top" }), "in", "/tmp/job-1/input-subtitles.srt", "out.mp4");
    expect(valueAfter(args, "-vf")).toBe("subtitles=filename='/tmp/job-1/input-subtitles.srt':force_style='FontSize=30,Alignment=8,MarginV=20',format=yuv420p");
  });

  it("refuses a path that would need escaping in the filter graph", () => {
    expect(() => buildCaptionBurnArgs(params<CaptionBurnParams>("caption.burn", {}), "in", "/tmp/it's:here.srt", "out.mp4")).toThrow(/not usable in a filter graph/);
  });
});

describe("qr options", () => {
  it("renders at the requested size", () => {
    expect(qrOptions({ content: "x", format: "png", size: 300 })).toMatchObject({ width: 300 });
  });
});
