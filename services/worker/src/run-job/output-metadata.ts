import { imageSizeFromFile } from "image-size/fromFile";
import { JOB_TYPES, type JobTypeName } from "@renderbus/job-types";
import { readMp4Summary } from "../media/mp4-header.js";
import { probeMedia } from "../media/probe.js";
import type { ProviderOutput } from "../providers/index.js";

/** `result.metadata` of the job object (docs/concepts.md, "The job object") (null where not applicable). */
export interface OutputMetadata {
  durationMs: number | null;
  width: number | null;
  height: number | null;
  fileSize: number;
}

// Outputs whose header is read in-process: the values are the ones ffprobe reports for them
// (output-metadata.int.test.ts compares both on real outputs), without a ~100 ms ffprobe start per job.
const MP4_FAMILY = new Set(["video/mp4", "video/quicktime", "audio/mp4"]);
const RASTER_IMAGES = new Map([["image/jpeg", "jpg"], ["image/png", "png"], ["image/webp", "webp"]]);

/** Width, height and duration read without ffprobe, or null when the output is not one read that way (or is unreadable so). */
async function readHeader(kind: "video" | "audio" | "image", output: ProviderOutput): Promise<Omit<OutputMetadata, "fileSize"> | null> {
  try {
    if (kind === "image" && RASTER_IMAGES.has(output.contentType)) {
      const size = await imageSizeFromFile(output.path);
      if (size.type !== RASTER_IMAGES.get(output.contentType) || !size.width || !size.height) return null;
      return { durationMs: null, width: size.width, height: size.height };
    }
    if (kind !== "image" && MP4_FAMILY.has(output.contentType)) {
      const summary = await readMp4Summary(output.path);
      if (!summary || (kind === "video" && summary.width === null)) return null;
      return kind === "audio" ? { durationMs: summary.durationMs, width: null, height: null } : summary;
    }
  } catch {
    // Not read here: ffprobe decides.
  }
  return null;
}

/**
 * Measures the produced file: MP4/MOV/M4A movie headers and JPEG/PNG/WebP image headers are read in-process; other
 * media outputs are probed with ffprobe; the provider's word is taken for the rest.
 */
export async function measureOutput(type: JobTypeName, output: ProviderOutput, fileSize: number): Promise<OutputMetadata> {
  const kind = JOB_TYPES[type].output;
  const known = output.metadata ?? {};
  if (kind === "data" || output.contentType === "image/svg+xml") {
    return { durationMs: known.durationMs ?? null, width: known.width ?? null, height: known.height ?? null, fileSize };
  }
  const header = await readHeader(kind, output);
  if (header) return { ...header, fileSize };
  const probe = await probeMedia(output.path);
  if (kind === "image") return { durationMs: null, width: probe.width, height: probe.height, fileSize };
  if (kind === "audio") return { durationMs: probe.durationMs, width: null, height: null, fileSize };
  return { durationMs: probe.durationMs, width: probe.width, height: probe.height, fileSize };
}
