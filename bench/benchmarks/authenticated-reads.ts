import type { BenchContext } from "../context.js";
import { interleaved } from "../load/interleave.js";
import { runLoad } from "../load/run-load.js";
import type { LoadResult } from "../load/load-spec.js";
import { atLeast, below, percent, type BenchmarkResult } from "../result.js";
import { round1 } from "../stats.js";

/**
 * Benchmark 1 (issue 4): authenticated reads with an API key against the same gateway's `/healthz`, at the same
 * connection count. The gap is the price of key lookup, rate limiting and the gRPC hop.
 */
export async function benchAuthenticatedReads(ctx: BenchContext): Promise<BenchmarkResult> {
  const { connections, httpSeconds, latencyRounds: rounds } = ctx.sizes;
  const job = await fetch(`${ctx.gatewayUrl}/jobs`, {
    method: "POST",
    headers: { authorization: `Bearer ${ctx.orgs.main.key}`, "content-type": "application/json" },
    body: JSON.stringify({ type: "extract.metadata", inputs: { source: ctx.inputs.clipUrl } }),
  }).then(async (response) => {
    if (response.status !== 201) throw new Error(`POST /jobs answered ${response.status}: ${await response.text()}`);
    return ((await response.json()) as { data: { id: string } }).data;
  });
  const auth = { authorization: `Bearer ${ctx.orgs.main.key}` };
  const load = (path: string, headers?: Record<string, string>, durationSeconds = httpSeconds) =>
    runLoad({ kind: "http", url: `${ctx.gatewayUrl}${path}`, method: "GET", connections, durationSeconds, ...(headers ? { headers } : {}) });

  // An unmeasured run of each load at the measured concurrency first: JIT, connection pools and the services' heaps
  // grow to this load before any measured round. A light warm-up (1 s, 10 at a time) left the first measured round of
  // GET /me with a p99 ~40% above the later ones, in every run.
  for (const [path, headers] of [["/healthz", {}], ["/me", auth], [`/jobs/${job.id}`, auth]] as const) await load(path, headers, Math.max(1, httpSeconds / 2));

  ctx.log(`  GET /healthz, /me and /jobs/{id} taking turns: ${rounds} rounds of ${httpSeconds} s each, ${connections} connections`);
  const { healthz, me, getJob } = await interleaved(rounds, {
    healthz: () => load("/healthz"),
    me: () => load("/me", auth),
    getJob: () => load(`/jobs/${job.id}`, auth),
  }, ctx.log);

  const row = (name: string, result: LoadResult) => [
    name,
    Math.round(result.perSecond),
    percent(result.perSecond, healthz.perSecond),
    result.p50Ms,
    result.p99Ms,
    result.errors,
  ];
  return {
    id: "authenticated-reads",
    title: "1. Authenticated reads (API key) vs gateway /healthz",
    baseline: `gateway GET /healthz, ${connections} connections, autocannon in its own process; the three loads take turns for ${rounds} rounds of ${httpSeconds} s (p50 and p99 over every request of every round)`,
    columns: ["request", "req/s", "% of /healthz", "p50 ms", "p99 ms", "errors/non-2xx"],
    rows: [row("GET /healthz (baseline)", healthz), row("GET /me", me), row("GET /jobs/{id}", getJob)],
    targets: [
      atLeast("GET /me req/s vs /healthz", percent(me.perSecond, healthz.perSecond), 50, "%"),
      below("GET /me p99", round1(me.p99Ms), 20, " ms"),
      atLeast("GET /jobs/{id} req/s vs /healthz", percent(getJob.perSecond, healthz.perSecond), 50, "%"),
      below("GET /jobs/{id} p99", round1(getJob.p99Ms), 20, " ms"),
    ],
    notes: [],
    data: { connections, rounds, roundSeconds: httpSeconds, healthz, me, getJob },
  };
}
