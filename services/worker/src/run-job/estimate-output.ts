import { JOB_TYPES, type JobTypeName, type PriceInput } from "@renderbus/job-types";
import type { MediaProbe } from "../media/probe.js";

/**
 * What the output will probably be, from the probed source and the params: the basis of the credit reservation
 * made before the provider starts. The charge itself is computed from the real output.
 */
export function estimateOutput(type: JobTypeName, params: Record<string, unknown>, probes: Record<string, MediaProbe>): PriceInput {
  const output = JOB_TYPES[type].output;
  if (output === "image" || output === "data") return { output };
  const source = probes.source;
  const durationMs = source?.durationMs ?? 0;
  if (output === "audio") return { output, durationMs };
  let height = source?.height ?? null;
  if (type === "transcode") {
    const width = typeof params.width === "number" ? params.width : undefined;
    const requestedHeight = typeof params.height === "number" ? params.height : undefined;
    if (requestedHeight !== undefined) height = requestedHeight;
    else if (width !== undefined && source?.width && source.height) height = Math.round((source.height * width) / source.width);
  }
  return { output, durationMs, height };
}
