import type { LoadResult } from "./load-spec.js";

/**
 * Runs each load `rounds` times, taking turns (A B, B A, A B, ...), and merges each load's rounds. A benchmark and
 * its baseline measured one after the other meet different moments of a shared machine (other tenants, a PostgreSQL
 * checkpoint); taking turns gives both the same mix, which is what keeps their ratio steady between runs.
 */
export async function interleaved<K extends string>(
  rounds: number,
  loads: Record<K, () => Promise<LoadResult>>,
  log?: (line: string) => void,
): Promise<Record<K, LoadResult>> {
  const names = Object.keys(loads) as K[];
  const results = new Map<K, LoadResult[]>(names.map((name) => [name, []]));
  for (let round = 0; round < rounds; round += 1) {
    for (const name of round % 2 === 0 ? names : [...names].reverse()) {
      const result = await loads[name]();
      log?.(`    round ${round + 1} ${name}: ${Math.round(result.perSecond)}/s, p99 ${result.p99Ms} ms`);
      results.get(name)!.push(result);
    }
  }
  return Object.fromEntries(names.map((name) => [name, mergeLoads(results.get(name)!)])) as Record<K, LoadResult>;
}

/**
 * One result for several runs of a load: counts and time add up; p50 is the mean of the runs' p50 weighted by their
 * successes, p99 and max are the worst run's (the runs' raw latencies are not kept, and the worst is the honest bound).
 */
export function mergeLoads(runs: LoadResult[]): LoadResult {
  const ok = runs.reduce((sum, run) => sum + run.ok, 0);
  const elapsedMs = runs.reduce((sum, run) => sum + run.elapsedMs, 0);
  const non2xx: Record<string, number> = {};
  for (const run of runs) for (const [code, count] of Object.entries(run.non2xx ?? {})) non2xx[code] = (non2xx[code] ?? 0) + count;
  return {
    ok,
    errors: runs.reduce((sum, run) => sum + run.errors, 0),
    perSecond: ok / Math.max(0.001, elapsedMs / 1000),
    p50Ms: Math.round((runs.reduce((sum, run) => sum + run.p50Ms * run.ok, 0) / Math.max(1, ok)) * 10) / 10,
    p99Ms: Math.max(...runs.map((run) => run.p99Ms)),
    maxMs: Math.max(...runs.map((run) => run.maxMs)),
    elapsedMs,
    ...(Object.keys(non2xx).length ? { non2xx } : {}),
  };
}
