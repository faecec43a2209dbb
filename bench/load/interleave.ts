import { addHistograms, percentilesOf } from "./latency-histogram.js";
import type { LoadResult } from "./load-spec.js";

/**
 * Runs each measurement `rounds` times, taking turns (A B, B A, A B, ...), and returns each one's results in order. A
 * benchmark and its baseline measured one after the other meet different moments of a shared machine (other tenants,
 * a PostgreSQL checkpoint); taking turns gives both the same mix, which is what keeps their ratio steady between runs.
 */
export async function takeTurns<M extends Record<string, unknown>>(
  rounds: number,
  measurements: { [K in keyof M]: () => Promise<M[K]> },
  onResult?: (round: number, name: keyof M & string, result: M[keyof M]) => void,
): Promise<{ [K in keyof M]: Array<M[K]> }> {
  const names = Object.keys(measurements) as Array<keyof M & string>;
  const results = Object.fromEntries(names.map((name) => [name, []])) as unknown as { [K in keyof M]: Array<M[K]> };
  for (let round = 0; round < rounds; round += 1) {
    for (const name of round % 2 === 0 ? names : [...names].reverse()) {
      const result = await measurements[name]();
      onResult?.(round + 1, name, result);
      results[name].push(result);
    }
  }
  return results;
}

/** takeTurns for loads, each load's rounds merged into one result (see mergeLoads). */
export async function interleaved<K extends string>(
  rounds: number,
  loads: Record<K, () => Promise<LoadResult>>,
  log?: (line: string) => void,
): Promise<Record<K, LoadResult>> {
  const results = await takeTurns<Record<K, LoadResult>>(rounds, loads, (round, name, result) => log?.(`    round ${round} ${name}: ${Math.round(result.perSecond)}/s, p99 ${result.p99Ms} ms`));
  return Object.fromEntries(Object.entries<LoadResult[]>(results).map(([name, runs]) => [name, mergeLoads(runs)])) as Record<K, LoadResult>;
}

/**
 * One result for several runs of a load: counts and time add up, and p50, p99 and max are those of every operation of
 * every run (their latency histograms added). Until 2026-11-24 p99 was the worst run's: one round meeting a hiccup of
 * the shared machine set it, and it did not reproduce between runs (8 vs 16 ms for the same code).
 */
export function mergeLoads(runs: LoadResult[]): LoadResult {
  const ok = runs.reduce((sum, run) => sum + run.ok, 0);
  const elapsedMs = runs.reduce((sum, run) => sum + run.elapsedMs, 0);
  const latencyHistogram = addHistograms(runs.map((run) => run.latencyHistogram));
  const non2xx: Record<string, number> = {};
  for (const run of runs) for (const [code, count] of Object.entries(run.non2xx ?? {})) non2xx[code] = (non2xx[code] ?? 0) + count;
  return {
    ok,
    errors: runs.reduce((sum, run) => sum + run.errors, 0),
    perSecond: ok / Math.max(0.001, elapsedMs / 1000),
    ...percentilesOf(latencyHistogram),
    elapsedMs,
    latencyHistogram,
    ...(Object.keys(non2xx).length ? { non2xx } : {}),
  };
}
