import { describe, expect, it } from "vitest";
import { interleaved, mergeLoads } from "./interleave.js";
import type { LoadResult } from "./load-spec.js";

const run = (ok: number, elapsedMs: number, p50Ms: number, p99Ms: number, extra: Partial<LoadResult> = {}): LoadResult => ({
  ok,
  errors: 0,
  perSecond: ok / (elapsedMs / 1000),
  p50Ms,
  p99Ms,
  maxMs: p99Ms * 2,
  elapsedMs,
  ...extra,
});

describe("interleaved", () => {
  it("takes turns, reversing the order every other round", async () => {
    const order: string[] = [];
    const load = (name: string) => async () => {
      order.push(name);
      return run(100, 1000, 1, 2);
    };
    const merged = await interleaved(3, { baseline: load("baseline"), measured: load("measured") });
    expect(order).toEqual(["baseline", "measured", "measured", "baseline", "baseline", "measured"]);
    expect(merged.baseline.ok).toBe(300);
  });
});

describe("mergeLoads", () => {
  it("adds counts and time, weights p50 by successes and keeps the worst p99 and max", () => {
    const merged = mergeLoads([run(300, 1000, 10, 40, { errors: 1, non2xx: { "429": 1 } }), run(100, 1000, 30, 90, { non2xx: { "429": 2, "503": 1 } })]);
    expect(merged).toMatchObject({ ok: 400, errors: 1, perSecond: 200, p50Ms: 15, p99Ms: 90, maxMs: 180, elapsedMs: 2000, non2xx: { "429": 3, "503": 1 } });
  });
});
