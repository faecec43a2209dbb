import autocannon from "autocannon";
import type { LoadResult, LoadSpec } from "./load-spec.js";

/** Fixed-duration HTTP load with autocannon; only 2xx answers count as successes. */
export async function runHttpLoad(spec: Extract<LoadSpec, { kind: "http" }>): Promise<LoadResult> {
  const result = await autocannon({
    url: spec.url,
    method: spec.method,
    connections: spec.connections,
    duration: spec.durationSeconds,
    ...(spec.headers ? { headers: spec.headers } : {}),
    ...(spec.body !== undefined ? { body: spec.body } : {}),
  });
  const non2xx = Object.fromEntries(
    Object.entries(result.statusCodeStats)
      .filter(([code]) => !code.startsWith("2"))
      .map(([code, stats]) => [code, stats.count]),
  );
  const elapsedMs = result.duration * 1000;
  return {
    ok: result["2xx"],
    errors: result.errors + result.timeouts + result.non2xx,
    perSecond: result["2xx"] / result.duration,
    p50Ms: result.latency.p50,
    p99Ms: result.latency.p99,
    maxMs: result.latency.max,
    elapsedMs,
    non2xx,
  };
}
