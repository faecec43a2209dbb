import { Pool } from "undici";
import { latencyRecorder, percentilesOf } from "./latency-histogram.js";
import type { LoadResult, LoadSpec } from "./load-spec.js";

/** The baseline of webhook deliveries: `count` bare POSTs, `concurrency` at a time, over kept-alive connections. */
export async function runPostLoop(spec: Extract<LoadSpec, { kind: "post-loop" }>): Promise<LoadResult> {
  const url = new URL(spec.url);
  const pool = new Pool(url.origin, { connections: spec.concurrency });
  const latencies = latencyRecorder();
  let errors = 0;
  let next = 0;
  const started = performance.now();
  const worker = async () => {
    while (next < spec.count) {
      next += 1;
      const t0 = performance.now();
      try {
        const response = await pool.request({ path: url.pathname, method: "POST", headers: spec.headers, body: spec.body });
        await response.body.dump();
        if (response.statusCode >= 200 && response.statusCode < 300) latencies.record(performance.now() - t0);
        else errors += 1;
      } catch {
        errors += 1;
      }
    }
  };
  await Promise.all(Array.from({ length: spec.concurrency }, worker));
  const elapsedMs = performance.now() - started;
  await pool.close();
  const latencyHistogram = latencies.encode();
  return { ok: latencies.count, errors, perSecond: latencies.count / (elapsedMs / 1000), ...percentilesOf(latencyHistogram), elapsedMs, latencyHistogram };
}
