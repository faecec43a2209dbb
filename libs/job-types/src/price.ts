/** Every job costs at least this many credits (docs/concepts.md, "Credits"). */
export const MINIMUM_PRICE = 1;

/** What kind of file a job produces. */
export type OutputKind = "video" | "image" | "audio" | "data";

/** What the price depends on: the kind of output, and for video/audio its duration and height. */
export interface PriceInput {
  output: OutputKind;
  durationMs?: number | null;
  height?: number | null;
}

/** A price in credits with its human-readable reason (`cost.breakdown`). */
export interface Price {
  credits: number;
  breakdown: string;
}

const MS_PER_UNIT = 10_000;

/**
 * Output durations are priced at a tenth of a second: a container's duration carries sub-frame noise (a 30 s
 * transcode measures 30.001 s), and a started 10 s unit must not be charged for it.
 */
const PRICED_RESOLUTION_MS = 100;

/** The duration a price counts: the output's duration rounded to the nearest 100 ms (never negative). */
export function pricedDurationMs(durationMs: number | null | undefined): number {
  return Math.round(Math.max(0, durationMs ?? 0) / PRICED_RESOLUTION_MS) * PRICED_RESOLUTION_MS;
}

/** Credits per started 10 s of output: 1 up to 720p, 2 up to 1080p, 4 above; audio counts as 1. */
export function creditsPerUnit(output: OutputKind, height: number | null | undefined): number {
  if (output !== "video" || !height || height <= 720) return 1;
  return height <= 1080 ? 2 : 4;
}

/** `2m7s`, or `0m10.4s` when the priced duration has tenths: the breakdown shows exactly what was counted. */
function formatDuration(pricedMs: number): string {
  const tenths = Math.round(pricedMs / PRICED_RESOLUTION_MS);
  const totalSeconds = Math.floor(tenths / 10);
  const fraction = tenths % 10;
  return `${Math.floor(totalSeconds / 60)}m${totalSeconds % 60}${fraction ? `.${fraction}` : ""}s`;
}

/**
 * The price of one job output (docs/concepts.md, "Credits"): video/audio cost per started 10 seconds of output, counted on the
 * duration rounded to the nearest 100 ms (so `cost.breakdown` shows the duration `cost.credits` was counted from);
 * images and metadata cost the minimum. Used both for the estimate (from the probed input) and the actual charge.
 */
export function priceOf({ output, durationMs, height }: PriceInput): Price {
  if (output === "image") return { credits: MINIMUM_PRICE, breakdown: "image" };
  if (output === "data") return { credits: MINIMUM_PRICE, breakdown: "metadata" };
  const duration = pricedDurationMs(durationMs);
  // Integer milliseconds, so no floating-point remainder can start an extra unit.
  const units = Math.ceil(duration / MS_PER_UNIT);
  const credits = Math.max(MINIMUM_PRICE, units * creditsPerUnit(output, height));
  const breakdown = output === "video" && height ? `${formatDuration(duration)} video @${height}p` : `${formatDuration(duration)} ${output}`;
  return { credits, breakdown };
}
