import { z } from "zod";

/** The nine anchors a watermark can be placed at. */
export const WATERMARK_POSITIONS = [
  "top-left", "top-center", "top-right",
  "center-left", "center", "center-right",
  "bottom-left", "bottom-center", "bottom-right",
] as const;
export type WatermarkPosition = (typeof WATERMARK_POSITIONS)[number];

export const VIDEO_CODECS = ["h264", "h265", "vp9", "av1"] as const;
export const VIDEO_FORMATS = ["mp4", "webm", "mkv", "mov"] as const;
export const X264_PRESETS = ["ultrafast", "superfast", "veryfast", "faster", "fast", "medium", "slow", "slower", "veryslow"] as const;

// Even dimensions only: yuv420p encoders (x264, x265, vp9) reject odd widths and heights.
// multipleOf, not a refine, so that the published JSON Schema says it too.
const dimension = z.number().int().min(16).max(7680).multipleOf(2, "must be an even number");

/** Params of `transcode`. width/height alone keep the aspect ratio; both together scale to exactly that size. */
export const transcodeParams = z.strictObject({
  codec: z.enum(VIDEO_CODECS).default("h264").describe("Video codec"),
  crf: z.number().int().min(0).max(63).default(23).describe("Constant rate factor (quality; lower is better). 0-51 for h264/h265, 0-63 for vp9/av1"),
  preset: z.enum(X264_PRESETS).default("veryfast").describe("Encoder speed/size trade-off"),
  width: dimension.optional().describe("Output width in pixels (even)"),
  height: dimension.optional().describe("Output height in pixels (even)"),
  fps: z.number().min(1).max(120).optional().describe("Output frame rate"),
  format: z.enum(VIDEO_FORMATS).default("mp4").describe("Container format"),
  audioBitrate: z.number().int().min(32).max(512).default(128).describe("Audio bitrate in kbit/s"),
}).superRefine((params, context) => {
  if ((params.codec === "h264" || params.codec === "h265") && params.crf > 51) {
    context.addIssue({ code: "too_big", origin: "number", maximum: 51, inclusive: true, path: ["crf"], input: params.crf, message: "must be <= 51" });
  }
  if (params.format === "webm" && (params.codec === "h264" || params.codec === "h265")) {
    context.addIssue({ code: "custom", path: ["codec"], input: params.codec, message: "must be vp9 or av1 when format is webm" });
  }
  // ffmpeg's mov muxer only stores vp9 and av1 in mp4 proper.
  if (params.format === "mov" && (params.codec === "vp9" || params.codec === "av1")) {
    context.addIssue({ code: "custom", path: ["codec"], input: params.codec, message: "must be h264 or h265 when format is mov" });
  }
}).meta({
  // The same three rules for the published JSON Schema (GET /job-types, MCP), which a refine does not reach. A field
  // left out takes its default (codec h264, format mp4), so an absent codec counts as h264 here too.
  allOf: [
    { if: { properties: { codec: { enum: ["h264", "h265"] } } }, then: { properties: { crf: { maximum: 51 } } } },
    { if: { properties: { format: { const: "webm" } }, required: ["format"] }, then: { properties: { codec: { enum: ["vp9", "av1"] } }, required: ["codec"] } },
    { if: { properties: { format: { const: "mov" } }, required: ["format"] }, then: { properties: { codec: { enum: ["h264", "h265"] } } } },
  ],
});

/** Params of `thumbnail`. */
export const thumbnailParams = z.strictObject({
  timestamp: z.number().min(0).default(0).describe("Position in the source, in seconds"),
  width: dimension.optional().describe("Image width in pixels"),
  height: dimension.optional().describe("Image height in pixels"),
  format: z.enum(["jpg", "png", "webp"]).default("jpg").describe("Image format"),
});

/** Params of `audio.extract`. */
export const audioExtractParams = z.strictObject({
  format: z.enum(["mp3", "aac", "wav", "opus"]).default("mp3").describe("Audio format"),
  bitrate: z.number().int().min(32).max(512).default(128).describe("Bitrate in kbit/s (ignored for wav)"),
});

/** Params of `extract.metadata` (none). */
export const extractMetadataParams = z.strictObject({});

/** Params of `qr.generate`. */
export const qrGenerateParams = z.strictObject({
  content: z.string().min(1).max(2000).describe("Text or URL to encode"),
  format: z.enum(["png", "svg"]).default("png").describe("Image format"),
  size: z.number().int().min(64).max(4096).default(512).describe("Width and height in pixels"),
});

/** Params of `watermark.add`: a text, or an image given as the `image` input (both may be used). */
export const watermarkAddParams = z.strictObject({
  text: z.string().min(1).max(200).optional().describe("Watermark text (required unless an image input is given)"),
  position: z.enum(WATERMARK_POSITIONS).default("bottom-right").describe("Anchor"),
  opacity: z.number().min(0).max(1).default(0.8).describe("0 (invisible) to 1 (opaque)"),
  scale: z.number().min(0.01).max(1).default(0.2).describe("Image watermark width, or text height x 10, as a fraction of the video width/height"),
  padding: z.number().int().min(0).max(1000).default(16).describe("Distance from the edges in pixels"),
});

/** Params of `caption.burn`. */
export const captionBurnParams = z.strictObject({
  fontSize: z.number().int().min(8).max(200).default(24).describe("Font size"),
  position: z.enum(["top", "bottom", "center"]).default("bottom").describe("Vertical placement"),
});

export type TranscodeParams = z.output<typeof transcodeParams>;
export type ThumbnailParams = z.output<typeof thumbnailParams>;
export type AudioExtractParams = z.output<typeof audioExtractParams>;
export type ExtractMetadataParams = z.output<typeof extractMetadataParams>;
export type QrGenerateParams = z.output<typeof qrGenerateParams>;
export type WatermarkAddParams = z.output<typeof watermarkAddParams>;
export type CaptionBurnParams = z.output<typeof captionBurnParams>;
