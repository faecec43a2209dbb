/** Every job costs at least this many credits (SPEC section 4). */
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

const SECONDS_PER_UNIT = 10;

/** Credits per started 10 s of output: 1 up to 720p, 2 up to 1080p, 4 above; audio counts as 1. */
export function creditsPerUnit(output: OutputKind, height: number | null | undefined): number {
  if (output !== "video" || !height || height <= 720) return 1;
  return height <= 1080 ? 2 : 4;
}

function formatDuration(durationMs: number): string {
  const totalSeconds = Math.round(durationMs / 1000);
  return `${Math.floor(totalSeconds / 60)}m${totalSeconds % 60}s`;
}

/**
 * The price of one job output (SPEC section 4): video/audio cost per started 10 seconds of output, images and
 * metadata cost the minimum. Used both for the estimate (from the probed input) and the actual charge.
 */
export function priceOf({ output, durationMs, height }: PriceInput): Price {
  if (output === "image") return { credits: MINIMUM_PRICE, breakdown: "image" };
  if (output === "data") return { credits: MINIMUM_PRICE, breakdown: "metadata" };
  const duration = Math.max(0, durationMs ?? 0);
  const units = Math.ceil(duration / 1000 / SECONDS_PER_UNIT);
  const credits = Math.max(MINIMUM_PRICE, units * creditsPerUnit(output, height));
  const breakdown = output === "video" && height ? `${formatDuration(duration)} video @${height}p` : `${formatDuration(duration)} ${output}`;
  return { credits, breakdown };
}
