/**
 * What a load child process runs. Load is generated in its own process so the generator does not share an event loop
 * with the receiver or the publisher of the benchmark itself.
 */
export type LoadSpec =
  | {
      kind: "http";
      url: string;
      method: "GET" | "POST";
      headers?: Record<string, string>;
      body?: string;
      connections: number;
      durationSeconds: number;
    }
  | {
      kind: "append";
      databaseUrl: string;
      schema: string;
      concurrency: number;
      durationSeconds: number;
    }
  | {
      kind: "post-loop";
      url: string;
      headers: Record<string, string>;
      body: string;
      concurrency: number;
      count: number;
    };

/** What every load kind reports: completed operations, errors, rate and latency. */
export interface LoadResult {
  ok: number;
  errors: number;
  /** Successful operations per second over the measured time. */
  perSecond: number;
  p50Ms: number;
  p99Ms: number;
  maxMs: number;
  elapsedMs: number;
  /** Every successful operation's latency (latencyRecorder().encode()), so rounds merge into one distribution. */
  latencyHistogram: string;
  /** Status codes other than 2xx (http), by code. */
  non2xx?: Record<string, number>;
}
