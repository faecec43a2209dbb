/**
 * `npm run bench` (on Node 24: scripts/bench.mjs) `[-- --quick] [-- --only <id[:service],...>] [-- --out <dir>] [-- --profile <dir>] [-- --log-level <level>] [-- --runtime bundle|source] [-- --pg-statements]`: starts the whole system on fresh infrastructure, runs every
 * benchmark of issue 10 and writes `<dir>/BENCHMARKS.md` and `<dir>/benchmarks.json` (default dir: docs/).
 */
import { execFile } from "node:child_process";
import { readFile, writeFile, mkdir } from "node:fs/promises";
import { join, resolve } from "node:path";
import { parseArgs, promisify } from "node:util";
import { Bus } from "@renderbus/bus";
import { benchAuthenticatedReads } from "./benchmarks/authenticated-reads.js";
import { benchBatchEndToEnd } from "./benchmarks/batch-end-to-end.js";
import { benchCappedReplicas } from "./benchmarks/capped-replicas.js";
import { benchJobAcceptance } from "./benchmarks/job-acceptance.js";
import { benchJobOverhead } from "./benchmarks/job-overhead.js";
import { benchProgressOverhead } from "./benchmarks/progress-overhead.js";
import { memoryResult } from "./benchmarks/memory.js";
import { benchQueuedToRunning } from "./benchmarks/queued-to-running.js";
import { benchUploadThroughput } from "./benchmarks/upload-throughput.js";
import { benchWebhookPeers } from "./benchmarks/webhook-peers.js";
import { benchWebhooks } from "./benchmarks/webhooks.js";
import { benchSizes, type BenchContext } from "./context.js";
import { PG_STATEMENTS_SETTINGS, postgresVersion, startBenchEnvironment } from "./environment.js";
import { startInputServer } from "./file-server.js";
import { machineInfo } from "./machine.js";
import { idleCpuMsPerSecond } from "./cpu.js";
import { MemorySampler } from "./memory.js";
import { createBenchOrg } from "./orgs.js";
import { startWebhookReceiver } from "./receiver.js";
import { startReplica } from "./replicas.js";
import { renderChaosRecord, renderMarkdown, type BenchReport, type ChaosRecord } from "./report.js";
import type { BenchmarkResult } from "./result.js";

const repoRoot = resolve(import.meta.dirname, "..");
const { values: args } = parseArgs({ options: { quick: { type: "boolean", default: false }, out: { type: "string" }, profile: { type: "string" }, "log-level": { type: "string" }, only: { type: "string" }, runtime: { type: "string", default: "bundle" }, "pg-statements": { type: "boolean", default: false } } });
// --only webhooks,queued-to-running: runs just those benchmarks (while working on one path); the report says so.
// `capped-replicas:gateway` (or `:webhook-dispatcher`, `:worker`) runs that benchmark for the named services' curves only.
const onlyIds = args.only ? args.only.split(",") : undefined;
const only = onlyIds ? new Set(onlyIds.map((id) => id.split(":")[0]!)) : undefined;
const cappedServices = onlyIds?.filter((id) => id.startsWith("capped-replicas:")).map((id) => id.slice("capped-replicas:".length));
const sizes = benchSizes(args.quick ?? false);
const outDir = resolve(args.out ?? join(repoRoot, "docs"));
const startedAt = Date.now();
const log = (line: string) => process.stderr.write(`[bench ${((Date.now() - startedAt) / 1000).toFixed(1).padStart(6)} s] ${line}\n`);

// Every run is bounded: a stuck benchmark must not hold the machine.
const hardLimitMs = (sizes.quick ? 12 : 40) * 60_000;
setTimeout(() => {
  log(`run exceeded ${hardLimitMs / 60_000} min; giving up`);
  process.exit(2);
}, hardLimitMs).unref();

async function main(): Promise<number> {
  // --runtime source: the services from TypeScript through tsx, as the tests run them (to compare with the bundles
  // production runs). Through the environment, not an option: the system and the replicas are started in
  // environment.ts and in the benchmarks, which all take the default from RENDERBUS_SERVICE_RUNTIME.
  if (args.runtime !== "bundle" && args.runtime !== "source") throw new Error(`--runtime must be bundle or source, not ${args.runtime}`);
  if (args.runtime === "bundle") await buildServiceBundles();
  process.env.RENDERBUS_SERVICE_RUNTIME = args.runtime;
  log(`starting the system (${sizes.quick ? "quick" : "full"} run, services from ${args.runtime})`);
  // --log-level warn: the services' LOG_LEVEL (default info, as deployed), to measure what per-request logging costs.
  // --pg-statements: pg_stat_statements in the run's PostgreSQL; benchmark 10 reports each sender's statements.
  const env = await startBenchEnvironment((line) => log(`  infra: ${line}`), args["log-level"] ? { LOG_LEVEL: args["log-level"] } : {}, args["pg-statements"] ? PG_STATEMENTS_SETTINGS : []);
  const { system } = env;
  const bus = await Bus.connect({ url: env.infra.natsUrl, name: "bench", namespace: env.namespace });
  const receiver = await startWebhookReceiver();
  const inputs = await startInputServer();
  const benchmarks: BenchmarkResult[] = [];
  const failures: BenchReport["failures"] = [];
  try {
    log("creating orgs with the operator CLI");
    const cliEnv = system.env;
    const [main, batch, accept, ...webhook] = await Promise.all([
      createBenchOrg(cliEnv, { name: "bench main", plan: "scale" }),
      createBenchOrg(cliEnv, { name: "bench batch", plan: "scale", webhookUrl: receiver.url }),
      createBenchOrg(cliEnv, { name: "bench accept", plan: "pro" }),
      // The per-org in-flight cap (8) is global across replicas, so the capped curve's four replicas need at least 32
      // orgs to fill their 4 x 64 attempt slots, and only with the load spread evenly: with 16 its 4-replica point
      // measured the cap (128 in flight), with exactly 32 it still spent more CPU per delivery than one replica; it
      // gets 64 (webhookSpread). The other webhook benchmarks keep 32: a burst over more orgs costs the dispatcher
      // more per delivery (bench/findings.md, "The shared point of the capped dispatchers", "Twelfth round"). A quick
      // run's curve stops at 2 replicas (128 slots, 16 orgs): 32 in all.
      ...Array.from({ length: sizes.quick ? 32 : 64 }, (_, i) => createBenchOrg(cliEnv, { name: `bench webhooks ${i}`, plan: "starter", webhookUrl: receiver.url })),
    ]);
    const ctx: BenchContext = { sizes, env, gatewayUrl: system.gatewayUrl, bus, receiver, inputs, orgs: { main: main!, batch: batch!, accept: accept!, webhook: webhook.slice(0, 32), webhookSpread: webhook }, log, ...(args.profile ? { profileDir: resolve(args.profile) } : {}), pgStatements: args["pg-statements"] };

    const sampler = new MemorySampler(env.namespace);
    await new Promise((r) => setTimeout(r, 2000));
    const idle = sampler.snapshot();
    log(`idle RSS: ${JSON.stringify(idle)}`);
    const idleCpu = await idleCpuMsPerSecond(env.namespace, sizes.quick ? 3000 : 10_000);
    log(`idle CPU ms/s: ${JSON.stringify(idleCpu)}`);
    sampler.start();

    const run = async (id: string, benchmark: () => Promise<BenchmarkResult | BenchmarkResult[]>) => {
      if (only && !only.has(id)) return;
      log(`benchmark ${id}`);
      try {
        const result = await benchmark();
        benchmarks.push(...(Array.isArray(result) ? result : [result]));
      } catch (error) {
        log(`benchmark ${id} failed: ${(error as Error).stack ?? String(error)}`);
        failures.push({ id, error: (error as Error).message ?? String(error) });
      }
    };
    // Order matters: the idle-system latency runs before anything has queued work, and POST /jobs acceptance runs
    // last because the jobs it accepts stay waiting for the rest of the run.
    await run("authenticated-reads", () => (args.profile ? profiled(ctx, resolve(args.profile), benchAuthenticatedReads) : benchAuthenticatedReads(ctx)));
    await run("queued-to-running", () => benchQueuedToRunning(ctx));
    await run("webhooks", () => benchWebhooks(ctx));
    await run("webhook-peers", () => benchWebhookPeers(ctx));
    await run("batch-end-to-end", () => benchBatchEndToEnd(ctx));
    // Stops and restarts the system's dispatcher and worker: after the benchmarks that use them as started.
    await run("capped-replicas", () => benchCappedReplicas(ctx, cappedServices?.length ? cappedServices : undefined));
    // Before job-acceptance, whose waiting jobs would share the worker with the measured ones.
    await run("job-overhead", () => benchJobOverhead(ctx));
    await run("upload-throughput", () => benchUploadThroughput(ctx));
    // Stops the system's worker and runs each job on a worker of its own (progress on or off).
    await run("progress-overhead", () => benchProgressOverhead(ctx));
    await run("job-acceptance", () => (args.profile ? profiled(ctx, resolve(args.profile), benchJobAcceptance) : benchJobAcceptance(ctx)));
    benchmarks.push(memoryResult(idle, sampler.stop(), idleCpu));
    benchmarks.sort((a, b) => Number(a.title.split(".")[0]) - Number(b.title.split(".")[0]));

    const nats = bus.nc.info?.version ?? "unknown";
    const report: BenchReport = {
      generatedAt: new Date().toISOString(),
      serviceLogLevel: args["log-level"] ?? "info",
      quick: sizes.quick,
      durationSeconds: (Date.now() - startedAt) / 1000,
      machine: machineInfo({ postgres: await postgresVersion(env.databaseUrl), nats }),
      benchmarks,
      failures,
    };
    const findings = await readFile(join(repoRoot, "bench", "findings.md"), "utf8").catch(() => "");
    const chaos = await readFile(join(repoRoot, "docs", "chaos-runs.json"), "utf8")
      .then((text) => JSON.parse(text) as ChaosRecord)
      .catch(() => undefined);
    await mkdir(outDir, { recursive: true });
    await writeFile(join(outDir, "benchmarks.json"), `${JSON.stringify(report, null, 2)}\n`);
    await writeFile(join(outDir, "BENCHMARKS.md"), renderMarkdown(report, `${renderChaosRecord(chaos)}\n${findings}`));
    log(`wrote ${join(outDir, "BENCHMARKS.md")} and benchmarks.json`);
    for (const b of benchmarks) for (const t of b.targets) log(`  ${t.met === null ? "?" : t.met ? "met" : "MISSED"}  ${t.name}: ${t.actual} (goal ${t.target}${t.reason ? `; not judged: ${t.reason}` : ""})`);
  } finally {
    await bus.close().catch(() => undefined);
    await receiver.close();
    await inputs.close();
    await env.stop().catch((error: unknown) => log(`stopping the system: ${String(error)}`));
  }
  return failures.length === 0 ? 0 : 1;
}

/** Fresh bundles every run: a bench must never measure code older than the checkout. */
async function buildServiceBundles(): Promise<void> {
  const { stdout } = await promisify(execFile)(process.execPath, [join(repoRoot, "scripts", "build-services.mjs")], { cwd: repoRoot });
  log(stdout.trim());
}

/**
 * --profile <dir>: runs a benchmark (authenticated reads, POST /jobs) against an extra jobs replica and an extra gateway replica (pointed at that
 * jobs replica), both started with `node --cpu-prof`; they write their profiles into `dir` when stopped (summarize
 * with `tsx bench/profile-summary.ts <file>`).
 */
async function profiled(ctx: BenchContext, dir: string, benchmark: (ctx: BenchContext) => Promise<BenchmarkResult>): Promise<BenchmarkResult> {
  const nodeArgs = ["--cpu-prof", `--cpu-prof-dir=${dir}`];
  const jobs = await startReplica("jobs", ctx.env.system.env, { nodeArgs });
  const gateway = await startReplica("gateway", ctx.env.system.env, { nodeArgs, extraEnv: { JOBS_GRPC_ADDRESS: `127.0.0.1:${jobs.env.JOBS_GRPC_PORT}` } }).catch(async (error: unknown) => {
    await jobs.stop();
    throw error;
  });
  try {
    const result = await benchmark({ ...ctx, gatewayUrl: `http://127.0.0.1:${gateway.env.GATEWAY_PORT}` });
    return { ...result, notes: [...result.notes, "Measured against a gateway and a jobs replica running under --cpu-prof (profiling run)."] };
  } finally {
    await gateway.stop();
    await jobs.stop();
  }
}

main().then(
  (code) => process.exit(code),
  (error: unknown) => {
    log(`bench failed: ${(error as Error).stack ?? String(error)}`);
    process.exit(1);
  },
);
