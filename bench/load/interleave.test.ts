import { describe, expect, it } from "vitest";
import { interleaved, mergeLoads } from "./interleave.js";
import { latencyRecorder, percentilesOf } from "./latency-histogram.js";
import type { LoadResult } from "./load-spec.js";

/** A run whose operations took the given latencies (ms), over `elapsedMs`. */
const run = (latenciesMs: number[], elapsedMs: number, extra: Partial<LoadResult> = {}): LoadResult => {
  const recorder = latencyRecorder();
  for (const latency of latenciesMs) recorder.record(latency);
  const latencyHistogram = recorder.encode();
  return { ok: latenciesMs.length, errors: 0, perSecond: latenciesMs.length / (elapsedMs / 1000), ...percentilesOf(latencyHistogram), elapsedMs, latencyHistogram, ...extra };
};
const times = (count: number, latencyMs: number) => Array.from({ length: count }, () => latencyMs);

describe("interleaved", () => {
  it("takes turns, reversing the order every other round", async () => {
    const order: string[] = [];
    const load = (name: string) => async () => {
      order.push(name);
      return run(times(100, 1), 1000);
    };
    const merged = await interleaved(3, { baseline: load("baseline"), measured: load("measured") });
    expect(order).toEqual(["baseline", "measured", "measured", "baseline", "baseline", "measured"]);
    expect(merged.baseline.ok).toBe(300);
  });
});

describe("mergeLoads", () => {
  it("adds counts and time and takes p50, p99 and max over every operation of every run", () => {
    // Run 1: 990 fast operations and 10 slow ones (its own p99 is 5 ms); run 2: 1,000 at 5 ms, then one 80 ms stall.
    const first = run([...times(990, 2), ...times(10, 40)], 1000, { errors: 1, non2xx: { "429": 1 } });
    const second = run([...times(1000, 5), 80], 1000, { non2xx: { "429": 2, "503": 1 } });
    expect(first.p99Ms).toBe(2);
    const merged = mergeLoads([first, second]);
    expect(merged).toMatchObject({ ok: 2001, errors: 1, elapsedMs: 2000, non2xx: { "429": 3, "503": 1 } });
    expect(merged.perSecond).toBeCloseTo(1000.5);
    // Of 2,001 latencies the 1,001st is 5 ms; the 1,981st (99%) is still 5 ms, not the worst run's 40 ms.
    expect(merged).toMatchObject({ p50Ms: 5, p99Ms: 5 });
    expect(merged.maxMs).toBeCloseTo(80, 0); // three significant digits
    expect(percentilesOf(merged.latencyHistogram)).toMatchObject({ p50Ms: 5, p99Ms: 5 });
  });

  it("keeps sub-millisecond resolution", () => {
    expect(run([0.25, 0.5, 1.5, 7.3], 1000)).toMatchObject({ p50Ms: 0.5, p99Ms: 7.3 });
  });
});
