import { sql } from "kysely";
import { createDatabase, createEventStoreTables } from "@renderbus/db";
import type { BenchContext } from "../context.js";
import { interleaved } from "../load/interleave.js";
import type { LoadResult } from "../load/load-spec.js";
import { runLoad } from "../load/run-load.js";
import { atLeast, percent, type BenchmarkResult } from "../result.js";

const SCRATCH_SCHEMA = "bench_append";

/**
 * Benchmark 2 (issue 5): `POST /jobs` through the gateway (auth, rate limit, validation, credit check, event append
 * + outbox, projection) against a bare event-store append + outbox insert in one transaction at the same concurrency.
 * The org's plan lets one job run at a time and its jobs fetch an input that never answers, so the thousands of
 * accepted jobs wait instead of running under the measurement.
 */
export async function benchJobAcceptance(ctx: BenchContext): Promise<BenchmarkResult> {
  const { connections, httpSeconds, rounds } = ctx.sizes;
  const scratch = createDatabase({ url: ctx.env.databaseUrl, schema: SCRATCH_SCHEMA, maxConnections: 1 });
  await sql.raw(`create schema if not exists ${SCRATCH_SCHEMA}`).execute(scratch.db);
  await createEventStoreTables(scratch.db, SCRATCH_SCHEMA);

  /**
   * "Accepted" means stored and published: after each round the clock keeps running until the jobs service's outbox
   * is empty, so a relay that falls behind lowers the figure instead of hiding in the next round.
   */
  const untilPublished = async (round: LoadResult): Promise<LoadResult> => {
    const started = performance.now();
    const deadline = started + 60_000;
    while ((await sql<{ n: number }>`select count(*)::int as n from jobs.outbox`.execute(scratch.db)).rows[0]!.n > 0) {
      if (performance.now() > deadline) throw new Error("the jobs outbox did not drain within 60 s of a POST /jobs round");
      await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const elapsedMs = round.elapsedMs + (performance.now() - started);
    return { ...round, elapsedMs, perSecond: round.ok / (elapsedMs / 1000) };
  };

  const bareLoad = () => runLoad({ kind: "append", databaseUrl: ctx.env.databaseUrl, schema: SCRATCH_SCHEMA, concurrency: connections, durationSeconds: httpSeconds });
  const acceptLoad = (durationSeconds: number) =>
    runLoad({
      kind: "http",
      url: `${ctx.gatewayUrl}/jobs`,
      method: "POST",
      headers: { authorization: `Bearer ${ctx.orgs.accept.key}`, "content-type": "application/json" },
      body: JSON.stringify({ type: "extract.metadata", inputs: { source: ctx.inputs.hangUrl } }),
      connections,
      durationSeconds,
    });
  // Unmeasured: the first seconds of load pay JIT compilation, gRPC and PostgreSQL pools growing to their size, and
  // the credit check's first misses (the first round measured ~half the rate of the next ones without this).
  ctx.log("  warming up POST /jobs (2 s, not measured)");
  await untilPublished(await acceptLoad(2));

  ctx.log(`  bare append + outbox and POST /jobs taking turns: ${rounds} rounds of ${httpSeconds} s each, concurrency ${connections}`);
  const { bare, accept } = await interleaved(rounds, { bare: bareLoad, accept: async () => untilPublished(await acceptLoad(httpSeconds)) }, ctx.log);
  await scratch.close();
  return {
    id: "job-acceptance",
    title: "2. POST /jobs acceptance vs bare event-store append",
    baseline: `appendToStream + enqueueOutbox in one transaction on a scratch schema, ${connections} concurrent loops over ${connections} connections, in its own process; baseline and POST /jobs take turns for ${rounds} rounds of ${httpSeconds} s (p50 and p99 over every operation of every round)`,
    columns: ["operation", "per s", "% of bare append", "p50 ms", "p99 ms", "errors/non-2xx"],
    rows: [
      ["bare append + outbox (baseline)", Math.round(bare.perSecond), 100, bare.p50Ms, bare.p99Ms, bare.errors],
      ["POST /jobs (201)", Math.round(accept.perSecond), percent(accept.perSecond, bare.perSecond), accept.p50Ms, accept.p99Ms, accept.errors],
    ],
    targets: [atLeast("POST /jobs jobs/s vs bare append", percent(accept.perSecond, bare.perSecond), 40, "%")],
    notes: [
      "POST /jobs rounds are timed until the jobs service's outbox is empty (every accepted job's job.queued is on JetStream), not only until the last response.",
      ...(accept.non2xx && Object.keys(accept.non2xx).length ? [`non-2xx answers: ${JSON.stringify(accept.non2xx)}`] : []),
    ],
    data: { connections, rounds, roundSeconds: httpSeconds, bare, accept },
  };
}
