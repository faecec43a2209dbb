/**
 * `npm run test:chaos`: the full fault suite. Under a steady load of jobs with webhooks it kill -9s every service in
 * turn and restarts it, restarts NATS and PostgreSQL, takes the webhook receiver down for 60 s, then runs a 3-node
 * JetStream cluster (streams with 3 replicas), partitions the node leading the job events stream for 30 s and
 * kills a node. After each fault it checks that every accepted job is
 * terminal, every job event is stored once, every delivery exists and succeeded, every batch completed once and the
 * credit ledger balances; it prints the table of faults survived and exits 1 if anything was lost.
 *
 * PostgreSQL and NATS are private instances on free ports (the shared ones are never touched); Redis (gateway rate
 * limits only) comes from REDIS_URL or a local redis-server.
 *
 *   npm run test:chaos                 # everything (about 10 minutes on 2 cores)
 *   npm run test:chaos -- --only=nats  # faults whose name contains "nats"
 *   npm run test:chaos -- --only="3 NATS" --repeat 10   # the selected faults 10 times, a fresh system each run
 *   ... --record                       # also writes docs/chaos-runs.json, which docs/BENCHMARKS.md shows
 */
import { execFileSync } from "node:child_process";
import { mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { canPingRedis, startLocalRedis, type LocalServer } from "@renderbus/testing";
import {
  EVERY_SERVICE,
  faultTable,
  killClusterNode,
  killService,
  partitionClusterNode,
  pauseReceiver,
  restartNats,
  restartPostgres,
  startChaosRig,
  type Fault,
  type FaultOutcome,
} from "../e2e/chaos/chaos-rig.js";

const { values } = parseArgs({ options: { only: { type: "string" }, repeat: { type: "string", default: "1" }, record: { type: "boolean", default: false } } });
const repeat = Number(values.repeat);
if (!Number.isInteger(repeat) || repeat < 1) throw new Error(`--repeat must be a whole number >= 1, not ${values.repeat}`);
const wanted = (fault: Fault) => !values.only || fault.name.toLowerCase().includes(values.only.toLowerCase());
const log = (line: string) => console.log(`${new Date().toISOString().slice(11, 19)} ${line}`);

async function redis(): Promise<{ url: string; server?: LocalServer }> {
  const url = process.env.REDIS_URL ?? "redis://127.0.0.1:6379";
  if (await canPingRedis(url)) return { url };
  const server = await startLocalRedis({ dir: mkdtempSync(join(tmpdir(), "rb-chaos-redis-")), persistent: false, log });
  return { url: server.url, server };
}

async function runPhase(title: string, faults: Fault[], cluster: boolean, redisUrl: string, outcomes: FaultOutcome[]): Promise<void> {
  const selected = faults.filter(wanted);
  if (selected.length === 0) return;
  log(`${title}: starting a private system`);
  const rig = await startChaosRig({ redisUrl, cluster, log });
  try {
    for (const fault of selected) {
      const outcome = await rig.run(fault);
      outcomes.push(outcome);
      log(`${fault.name}: ${outcome.problems.length === 0 ? "survived" : `LOST ${outcome.problems.join("; ")}`}`);
    }
  } finally {
    await rig.stop();
  }
}

const outcomes: FaultOutcome[] = [];
const { url: redisUrl, server: redisServer } = await redis();
let runsSurvived = 0;
try {
  for (let run = 1; run <= repeat; run += 1) {
    if (repeat > 1) log(`run ${run} of ${repeat}`);
    const before = outcomes.length;
    await runPhase("single NATS server", [...EVERY_SERVICE.map((service) => killService(service)), restartNats, restartPostgres, pauseReceiver(60)], false, redisUrl, outcomes);
    // The partition heals before the kill: each fault starts from a whole cluster.
    await runPhase("3-node NATS cluster", [partitionClusterNode(30), killClusterNode], true, redisUrl, outcomes);
    if (outcomes.slice(before).every((outcome) => outcome.problems.length === 0)) runsSurvived += 1;
  }
} catch (error) {
  console.error(error);
  process.exitCode = 1;
} finally {
  await redisServer?.stop();
}
console.log(`\nfaults survived:\n${faultTable(outcomes)}\n`);
if (repeat > 1) console.log(`runs survived without a loss: ${runsSurvived} of ${repeat}\n`);
if (values.record) {
  // What `npm run bench` shows beside its own figures (bench/report.ts): the run's selection, count and each fault.
  const repoRoot = join(dirname(fileURLToPath(import.meta.url)), "..");
  const commit = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: repoRoot, encoding: "utf8" }).trim();
  const record = { recordedAt: new Date().toISOString(), commit, only: values.only ?? null, repeat, runsSurvived, outcomes };
  writeFileSync(join(repoRoot, "docs", "chaos-runs.json"), `${JSON.stringify(record, null, 2)}\n`);
  console.log("wrote docs/chaos-runs.json");
}
if (outcomes.some((outcome) => outcome.problems.length > 0)) process.exitCode = 1;
// Service children and servers are stopped; timers of the load generator may linger.
process.exit(process.exitCode ?? 0);
