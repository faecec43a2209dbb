import { JOB_TYPES, type JobTypeName, type PriceInput } from "@renderbus/job-types";
import type { MediaProbe } from "../media/probe.js";

/**
 * What the output will be, from the probed source and the params: the basis of the credit reservation made before
 * the provider starts. `sourceDurationMs` is the source's length as measured (the container's word, or a packet
 * count when the container states none); the provider is stopped at the output length the reservation covers, so
 * a duration that understates the source shortens the output instead of lowering the charge. The charge itself is
 * the price of the real output.
 */
export function estimateOutput(
  type: JobTypeName,
  params: Record<string, unknown>,
  probes: Record<string, MediaProbe>,
  sourceDurationMs: number | null = probes.source?.durationMs ?? null,
): PriceInput {
  const output = JOB_TYPES[type].output;
  if (output === "image" || output === "data") return { output };
  const source = probes.source;
  const durationMs = sourceDurationMs ?? 0;
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
