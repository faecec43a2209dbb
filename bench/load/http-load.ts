import autocannon from "autocannon";
import { latencyRecorder, percentilesOf } from "./latency-histogram.js";
import type { LoadResult, LoadSpec } from "./load-spec.js";

/**
 * Fixed-duration HTTP load with autocannon; only 2xx answers count as successes. Latencies are recorded from
 * autocannon's per-response event at microsecond resolution (its own histogram keeps whole milliseconds).
 */
export async function runHttpLoad(spec: Extract<LoadSpec, { kind: "http" }>): Promise<LoadResult> {
  const latencies = latencyRecorder();
  const instance = autocannon({
    url: spec.url,
    method: spec.method,
    connections: spec.connections,
    duration: spec.durationSeconds,
    ...(spec.headers ? { headers: spec.headers } : {}),
    ...(spec.body !== undefined ? { body: spec.body } : {}),
  });
  instance.on("response", (_client: unknown, statusCode: number, _bytes: number, responseTimeMs: number) => {
    if (statusCode >= 200 && statusCode < 300) latencies.record(responseTimeMs);
  });
  const result = await instance;
  const non2xx = Object.fromEntries(
    Object.entries(result.statusCodeStats)
      .filter(([code]) => !code.startsWith("2"))
      .map(([code, stats]) => [code, stats.count]),
  );
  const elapsedMs = result.duration * 1000;
  const latencyHistogram = latencies.encode();
  return {
    ok: result["2xx"],
    errors: result.errors + result.timeouts + result.non2xx,
    perSecond: result["2xx"] / result.duration,
    ...percentilesOf(latencyHistogram),
    elapsedMs,
    latencyHistogram,
    non2xx,
  };
}
