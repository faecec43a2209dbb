import { z } from "zod";
import type { OutputKind } from "./price.js";
import {
  audioExtractParams, captionBurnParams, extractMetadataParams, qrGenerateParams, thumbnailParams, transcodeParams,
  watermarkAddParams,
} from "./params-schemas.js";

export const JOB_TYPE_NAMES = [
  "transcode", "thumbnail", "audio.extract", "extract.metadata", "qr.generate", "watermark.add", "caption.burn",
] as const;
export type JobTypeName = (typeof JOB_TYPE_NAMES)[number];

/** One input a job type takes: `inputs[name]` is an http(s) URL or an upload id (`upload_...`, docs/uploads.md). */
export interface JobTypeInput {
  name: string;
  required: boolean;
  description: string;
}

/** Everything the API, the MCP tools and the worker need to know about a job type. */
export interface JobTypeDefinition {
  name: JobTypeName;
  description: string;
  inputs: JobTypeInput[];
  /** Strict zod schema with defaults; parse with `parseJobParams`. */
  paramsSchema: z.ZodType;
  /** JSON Schema of the params as a client sends them (defaulted fields are optional). */
  paramsJsonSchema: Record<string, unknown>;
  output: OutputKind;
  /** "basic": every plan; "all": plans whose job types are "all" (starter and above). */
  tier: "basic" | "all";
  /** The price rule in words, served by `GET /job-types`. */
  price: string;
}

const SOURCE: JobTypeInput = { name: "source", required: true, description: "URL (http/https) of the source media, or an upload id (upload_...)" };
const PER_10S_VIDEO = "1 credit per started 10 s of output video up to 720p, 2 up to 1080p, 4 above; minimum 1 credit";

function define(
  definition: Omit<JobTypeDefinition, "paramsJsonSchema" | "paramsSchema"> & { paramsSchema: z.ZodType },
): JobTypeDefinition {
  const paramsJsonSchema = z.toJSONSchema(definition.paramsSchema, { io: "input", unrepresentable: "any" }) as Record<string, unknown>;
  delete paramsJsonSchema.$schema;
  return { ...definition, paramsJsonSchema };
}

/** The job types (docs/concepts.md, "Jobs"). */
export const JOB_TYPES: Record<JobTypeName, JobTypeDefinition> = {
  transcode: define({
    name: "transcode",
    description: "Re-encode a video with another codec, quality, size, frame rate or container",
    inputs: [SOURCE],
    paramsSchema: transcodeParams,
    output: "video",
    tier: "basic",
    price: PER_10S_VIDEO,
  }),
  thumbnail: define({
    name: "thumbnail",
    description: "Capture one frame of a video as an image",
    inputs: [SOURCE],
    paramsSchema: thumbnailParams,
    output: "image",
    tier: "basic",
    price: "1 credit",
  }),
  "audio.extract": define({
    name: "audio.extract",
    description: "Extract the audio track of a video (or convert an audio file)",
    inputs: [SOURCE],
    paramsSchema: audioExtractParams,
    output: "audio",
    tier: "basic",
    price: "1 credit per started 10 s of output audio; minimum 1 credit",
  }),
  "extract.metadata": define({
    name: "extract.metadata",
    description: "Probe a media file and return a JSON summary (format, duration, streams)",
    inputs: [SOURCE],
    paramsSchema: extractMetadataParams,
    output: "data",
    tier: "basic",
    price: "1 credit",
  }),
  "qr.generate": define({
    name: "qr.generate",
    description: "Render a QR code for a text or URL",
    inputs: [],
    paramsSchema: qrGenerateParams,
    output: "image",
    tier: "basic",
    price: "1 credit",
  }),
  "watermark.add": define({
    name: "watermark.add",
    description: "Overlay a text or an image watermark on a video",
    inputs: [SOURCE, { name: "image", required: false, description: "URL (http/https) or upload id (upload_...) of a watermark image (PNG with alpha works best)" }],
    paramsSchema: watermarkAddParams,
    output: "video",
    tier: "all",
    price: PER_10S_VIDEO,
  }),
  "caption.burn": define({
    name: "caption.burn",
    description: "Burn SRT or WebVTT subtitles into a video",
    inputs: [SOURCE, { name: "subtitles", required: true, description: "URL (http/https) or upload id (upload_...) of an SRT or WebVTT file" }],
    paramsSchema: captionBurnParams,
    output: "video",
    tier: "all",
    price: PER_10S_VIDEO,
  }),
};

export function isJobTypeName(value: string): value is JobTypeName {
  return (JOB_TYPE_NAMES as readonly string[]).includes(value);
}

/** Whether a plan whose job types are `planJobTypes` ("basic" or "all") may run this type. */
export function jobTypeAvailableOn(type: JobTypeName, planJobTypes: "basic" | "all"): boolean {
  return planJobTypes === "all" || JOB_TYPES[type].tier === "basic";
}
