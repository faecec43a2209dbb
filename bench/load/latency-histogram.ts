import * as hdr from "hdr-histogram-js";

/** Latencies are kept in microseconds: autocannon's own histogram rounds to whole milliseconds, too coarse for p99s of 5-20 ms. */
const MICROS_PER_MS = 1000;

/** Records latencies of one load run; `encode()` is what crosses the process boundary in a LoadResult. */
export interface LatencyRecorder {
  record(latencyMs: number): void;
  readonly count: number;
  encode(): string;
}

const build = () => hdr.build({ lowestDiscernibleValue: 1, highestTrackableValue: 600_000_000, numberOfSignificantValueDigits: 3 });

export function latencyRecorder(): LatencyRecorder {
  const histogram = build();
  return {
    record: (latencyMs) => histogram.recordValue(Math.max(1, Math.round(latencyMs * MICROS_PER_MS))),
    get count() {
      return histogram.totalCount;
    },
    encode: () => hdr.encodeIntoCompressedBase64(histogram),
  };
}

export interface LatencyPercentiles {
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
}

/**
 * One histogram of every latency of several runs. Percentiles of it are those of all requests of all rounds: a
 * statistic of the whole sample, where the worst round's p99 moved with whichever round met a hiccup of the shared
 * machine.
 */
export function addHistograms(encoded: readonly string[]): string {
  const total = build();
  for (const one of encoded) total.add(hdr.decodeFromCompressedBase64(one));
  return hdr.encodeIntoCompressedBase64(total);
}

/** p50, p99 and max of an encoded histogram, in milliseconds rounded to 0.1. */
export function percentilesOf(encoded: string): LatencyPercentiles {
  const histogram = hdr.decodeFromCompressedBase64(encoded);
  const ms = (micros: number) => Math.round(micros / 100) / 10;
  return { p50Ms: ms(histogram.getValueAtPercentile(50)), p99Ms: ms(histogram.getValueAtPercentile(99)), maxMs: ms(histogram.maxValue) };
}
