import { sql } from "kysely";
import { createDatabase, createEventStoreTables } from "@renderbus/db";
import type { BenchContext } from "../context.js";
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
  const { connections, httpSeconds } = ctx.sizes;
  const scratch = createDatabase({ url: ctx.env.databaseUrl, schema: SCRATCH_SCHEMA, maxConnections: 1 });
  await sql.raw(`create schema if not exists ${SCRATCH_SCHEMA}`).execute(scratch.db);
  await createEventStoreTables(scratch.db, SCRATCH_SCHEMA);
  await scratch.close();

  ctx.log(`  bare append + outbox, concurrency ${connections}, ${httpSeconds} s`);
  const bare = await runLoad({ kind: "append", databaseUrl: ctx.env.databaseUrl, schema: SCRATCH_SCHEMA, concurrency: connections, durationSeconds: httpSeconds });
  ctx.log(`  POST /jobs, ${connections} connections, ${httpSeconds} s`);
  const accept = await runLoad({
    kind: "http",
    url: `${ctx.gatewayUrl}/jobs`,
    method: "POST",
    headers: { authorization: `Bearer ${ctx.orgs.accept.key}`, "content-type": "application/json" },
    body: JSON.stringify({ type: "extract.metadata", inputs: { source: ctx.inputs.hangUrl } }),
    connections,
    durationSeconds: httpSeconds,
  });
  return {
    id: "job-acceptance",
    title: "2. POST /jobs acceptance vs bare event-store append",
    baseline: `appendToStream + enqueueOutbox in one transaction on a scratch schema, ${connections} concurrent loops over ${connections} connections, in its own process`,
    columns: ["operation", "per s", "% of bare append", "p50 ms", "p99 ms", "errors/non-2xx"],
    rows: [
      ["bare append + outbox (baseline)", Math.round(bare.perSecond), 100, bare.p50Ms, bare.p99Ms, bare.errors],
      ["POST /jobs (201)", Math.round(accept.perSecond), percent(accept.perSecond, bare.perSecond), accept.p50Ms, accept.p99Ms, accept.errors],
    ],
    targets: [atLeast("POST /jobs jobs/s vs bare append", percent(accept.perSecond, bare.perSecond), 40, "%")],
    notes: accept.non2xx && Object.keys(accept.non2xx).length ? [`non-2xx answers: ${JSON.stringify(accept.non2xx)}`] : [],
    data: { connections, durationSeconds: httpSeconds, bare, accept },
  };
}
