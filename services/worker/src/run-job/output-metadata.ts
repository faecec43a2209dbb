import { JOB_TYPES, type JobTypeName } from "@renderbus/job-types";
import { probeMedia } from "../media/probe.js";
import type { ProviderOutput } from "../providers/index.js";

/** `result.metadata` of the job object (docs/concepts.md, "The job object") (null where not applicable). */
export interface OutputMetadata {
  durationMs: number | null;
  width: number | null;
  height: number | null;
  fileSize: number;
}

/** Measures the produced file: probes media outputs; takes the provider's word for the rest. */
export async function measureOutput(type: JobTypeName, output: ProviderOutput, fileSize: number): Promise<OutputMetadata> {
  const kind = JOB_TYPES[type].output;
  const known = output.metadata ?? {};
  if (kind === "data" || output.contentType === "image/svg+xml") {
    return { durationMs: known.durationMs ?? null, width: known.width ?? null, height: known.height ?? null, fileSize };
  }
  const probe = await probeMedia(output.path);
  if (kind === "image") return { durationMs: null, width: probe.width, height: probe.height, fileSize };
  if (kind === "audio") return { durationMs: probe.durationMs, width: null, height: null, fileSize };
  return { durationMs: probe.durationMs, width: probe.width, height: probe.height, fileSize };
}
