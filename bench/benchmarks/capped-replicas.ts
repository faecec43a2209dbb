import { execFile } from "node:child_process";
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { CONSUME_PULL_EXPIRES_MS, STREAMS, type StreamSpec } from "@renderbus/bus";
import type { ServiceName } from "@renderbus/testing";
import type { BenchContext } from "../context.js";
import { processCpuMs } from "../cpu.js";
import { cpuCapUnavailable, createCpuCap, removeStaleCpuCaps, type CpuCap } from "../cpu-cap.js";
import { burstDeliveries, perSecond, type Burst } from "../dispatcher-bursts.js";
import { mergeLoads } from "../load/interleave.js";
import { runLoad } from "../load/run-load.js";
import { pauseWhileIdle } from "../pause-while-idle.js";
import { quiesce } from "../quiesce.js";
import { startReplica, type Replica } from "../replicas.js";
import { atLeast, type BenchmarkResult } from "../result.js";
import { round2 } from "../stats.js";

const run = promisify(execFile);

/** Replica counts of every curve (a quick run stops at 2), and the scale-out each count must reach (issue 25 item 3). */
const REPLICA_COUNTS = [1, 2, 4];
const QUICK_REPLICA_COUNTS = [1, 2];
const TARGETS: Record<number, number> = { 2: 1.8, 4: 3.4 };

/**
 * Share of one core per replica. Small enough that four replicas (plus their load) leave the rest of the system
 * (PostgreSQL, NATS, the jobs service, the receiver, the load generators) the other cores, so the curve measures the
 * service's design and not the machine. The dispatcher's is 0.075: warm (see dispatcherCurve) a replica spends ~0.22 ms
 * of CPU per delivery, so four at 0.15 core drove ~2,200 deliveries/s, for which the rest of the system needs most
 * of the two cores (0.74 ms per delivery in all), and the 4-replica point spent 27% more CPU per delivery (2.88x).
 */
const CAPS = { dispatcher: 0.075, worker: 0.25, gateway: 0.15 } as const;

/**
 * A capped process warms up slowly (its JIT, caches and pools get a fraction of a core), so an earlier run's
 * 1-replica rounds still rose round after round and flattered the ratios. Before measuring, unmeasured rounds run
 * for at least WARM_MIN_MS and then until two in a row agree within WARM_TOLERANCE (for at most WARM_MAX_MS): two
 * early rounds can agree by chance while a capped gateway's JIT is still far from done (its 1-replica point then rose
 * from 225 to 672 req/s across the measured rounds).
 */
const WARM_TOLERANCE = 0.1;
const WARM_MIN_MS = 20_000;
/** Gateways and dispatchers warm up uncapped first (see gatewayCurve), for at least this long. */
const UNCAPPED_WARM_MIN_MS = 30_000;
const WARM_MAX_MS = 90_000;
/**
 * The gateway's points take turns (see gatewayCurve) over a rotating choice of replicas: as many rounds as replicas, so
 * that every replica counts the same in every point. With 5 rounds over 4 replicas the first one counted twice in the
 * 1-replica point: in the published run of 2026-11-29, midday, replicas #1 and #2 served half as many requests per
 * second as #0 and #3 for the whole run (read from the rotation of its rounds), which put the 1-replica point where
 * replica #0 was and not the average one.
 */
const GATEWAY_ROUNDS = Math.max(...REPLICA_COUNTS);
/** The dispatcher's take turns too (see dispatcherCurve); an even count gives each point each place equally. */
const DISPATCHER_ROUNDS = 4;

async function warmUntilSteady(ctx: BenchContext, label: string, round: () => Promise<number>, minMs = WARM_MIN_MS): Promise<void> {
  const started = Date.now();
  const rates: number[] = [];
  for (;;) {
    rates.push(await round());
    const elapsed = Date.now() - started;
    const [previous, last] = rates.slice(-2);
    const agree = previous !== undefined && last !== undefined && Math.abs(last - previous) <= WARM_TOLERANCE * Math.max(previous, last);
    if ((agree && elapsed >= minMs) || elapsed >= WARM_MAX_MS) break;
  }
  ctx.log(`    ${label} warm-up (${Math.round((Date.now() - started) / 1000)} s): ${rates.map((rate) => round2(rate)).join(", ")}/s`);
}

/** One point of a curve: `replicas` capped processes and what they did per second. */
interface Point {
  replicas: number;
  perSecond: number;
  rounds: number[];
  /** The replicas' CPU (ms) per unit of work over the measured rounds (dispatcher and gateway). */
  cpuMsPerUnit?: number;
  /** Share of the replicas' CPU caps they used over the measured rounds, 0-1 (dispatcher and gateway). */
  capUsed?: number;
}

/** CPU the replicas have used so far, ms (user + system, /proc). */
function replicasCpuMs(replicas: Array<{ replica: Replica }>): number {
  return replicas.reduce((sum, { replica }) => sum + (processCpuMs(replica.child.pid!) ?? 0), 0);
}

/**
 * Benchmark 13 (issue "Scale", item 3): N replicas of the dispatcher, the worker and the gateway, each replica held to
 * the same fixed share of a core (cgroup v1 CFS quota), at N = 1, 2, 4; the system's own uncapped process of that
 * service is stopped meanwhile (the gateway's is left idle: the load goes to the replicas). Reports the rate at each N
 * and N's rate over 1's.
 */
/** The services whose curves this benchmark draws, in its order; `--only capped-replicas:<service>` picks some. */
export const CAPPED_SERVICES = ["webhook-dispatcher", "worker", "gateway"] as const;

export async function benchCappedReplicas(ctx: BenchContext, services: readonly string[] = CAPPED_SERVICES): Promise<BenchmarkResult[]> {
  const unknown = services.filter((service) => !(CAPPED_SERVICES as readonly string[]).includes(service));
  if (unknown.length > 0) throw new Error(`capped-replicas: no curve for ${unknown.join(", ")} (one of ${CAPPED_SERVICES.join(", ")})`);
  const wanted = (service: (typeof CAPPED_SERVICES)[number]) => services.includes(service);
  const unavailable = cpuCapUnavailable();
  if (unavailable !== undefined) {
    ctx.log(`  skipped: ${unavailable}`);
    return [
      {
        id: "capped-replicas",
        title: "13. Capped replicas (dispatcher, worker, gateway)",
        baseline: "1 capped replica of the same service",
        columns: ["service"],
        rows: [],
        targets: [],
        notes: [`Skipped: ${unavailable}. The curves need a fixed CPU share per replica; without one, N replicas share the same cores as everything else and the figure says nothing about the design.`],
        data: { skipped: unavailable },
      },
    ];
  }
  removeStaleCpuCaps();
  const rounds = ctx.sizes.quick ? 1 : 3;
  const curves: Array<{ service: string; unit: string; cores: number; points: Point[] }> = [];
  if (wanted("webhook-dispatcher")) curves.push({ service: "webhook-dispatcher", unit: "deliveries/s", cores: CAPS.dispatcher, points: await dispatcherCurve(ctx, ctx.sizes.quick ? rounds : DISPATCHER_ROUNDS) });
  // A quick run (the one `npm test` makes) checks the machinery on the dispatcher alone: each capped worker or
  // gateway replica takes tens of seconds to start on a loaded machine.
  if (!ctx.sizes.quick) {
    if (wanted("worker")) curves.push({ service: "worker", unit: "jobs/s", cores: CAPS.worker, points: await workerCurve(ctx, Math.min(rounds, 2)) });
    if (wanted("gateway")) curves.push({ service: "gateway", unit: "req/s", cores: CAPS.gateway, points: await gatewayCurve(ctx, GATEWAY_ROUNDS) });
  }

  const rows = curves.flatMap(({ service, unit, cores, points }) =>
    points.map((point) => [service, `${cores} core`, point.replicas, `${round2(point.perSecond)} ${unit}`, `${round2(point.perSecond / points[0]!.perSecond)}x`, point.rounds.map((r) => round2(r)).join(", "),
      point.cpuMsPerUnit ?? "-",
      point.capUsed === undefined ? "-" : `${Math.round(point.capUsed * 100)}%`,
    ]),
  );
  const targets = curves.flatMap(({ service, points }) =>
    points.filter((point) => TARGETS[point.replicas] !== undefined).map((point) => atLeast(`${service} ${point.replicas} vs 1 replica`, round2(point.perSecond / points[0]!.perSecond), TARGETS[point.replicas]!, "x")),
  );
  return [
    {
      id: "capped-replicas",
      title: "13. Capped replicas (dispatcher, worker, gateway)",
      baseline: "1 replica of the same service under the same CPU cap, measured in the same run",
      columns: ["service", "cap per replica", "replicas", "rate", "vs 1", "rounds", "CPU ms per unit (replicas)", "share of the caps used"],
      rows,
      targets,
      notes: [
        "Each replica is its own process in its own cgroup v1 group (cpu.cfs_quota_us / cpu.cfs_period_us = the cap); the system's own process of that service is stopped while its curve runs (the gateway's stays up, idle).",
        `Dispatcher: bursts of synthetic job events over ${ctx.orgs.webhookSpread.length} starter orgs (as benchmark 4, over more orgs: see bench/findings.md, "Twelfth round"), first attempts per second. Worker: a batch of transcodes of a 4 s 640x360 clip (CPU-bound: ffmpeg runs inside the worker's group), jobs completed per second from the first start to the last completion. Gateway: GET /jobs/{id} with an API key, one autocannon per replica, summed.`,
        "CPU: the replicas' own utime + stime (/proc) over the measured rounds, per delivery or request, and as a share of their caps over the rounds' duration. A curve whose replicas all use ~100% of their caps at the same CPU per unit scales with them by construction; one whose replicas use less waits on something they share.",
        `${ctx.sizes.quick ? rounds : DISPATCHER_ROUNDS} round(s) per point for the dispatcher, ${GATEWAY_ROUNDS} for the gateway, at most 2 for the worker; the rate is over every round.${ctx.sizes.quick ? " Quick run: the dispatcher at 1 and 2 replicas only." : ""}`,
        "Every replica starts and warms up first (dispatcher and gateway uncapped, then capped; the worker, whose work is ffmpeg's, one round under its cap), then the points take turns round by round (1, 2, 4, then 4, 2, 1, ...), each round loading a rotating choice of N warm replicas, so that no point meets a different machine or a colder replica than another. The dispatchers and workers a round does not load are paused (SIGSTOP) once the system is idle, and the round starts after their pull requests expired, once the system is seen idle again (a replica paused in the middle of some work is resumed and paused again).",
      ],
      data: { caps: CAPS, curves },
    },
  ];
}

/**
 * Every capped replica alive, so that a run ended by its hard time limit (`process.exit` in run.ts) still kills them
 * and removes their groups: an `exit` listener may only do synchronous work, which both are.
 */
const alive = new Set<{ replica: Replica; cap: CpuCap }>();
process.once("exit", () => {
  for (const { replica, cap } of alive) {
    replica.child.kill("SIGKILL");
    cap.remove();
  }
});

/**
 * Starts `count` replicas of `service` beside the ones in `replicas`, each with its own group; in it at once unless
 * `capLater` (the caller then moves them in with capAll).
 */
async function growTo(ctx: BenchContext, service: ServiceName, cores: number, replicas: Array<{ replica: Replica; cap: CpuCap }>, count: number, extraEnv: Record<string, string> = {}, { capLater = false } = {}): Promise<void> {
  while (replicas.length < count) {
    const replica = await startReplica(service, ctx.env.system.env, { extraEnv });
    const cap = createCpuCap(`${service}-${replicas.length}`, cores);
    if (!capLater) cap.add(replica.child.pid!);
    replicas.push({ replica, cap });
    alive.add(replicas.at(-1)!);
  }
}

function capAll(replicas: Array<{ replica: Replica; cap: CpuCap }>): void {
  for (const { replica, cap } of replicas) cap.add(replica.child.pid!);
}

async function stopAll(replicas: Array<{ replica: Replica; cap: CpuCap }>): Promise<void> {
  await Promise.all(replicas.map(({ replica }) => replica.stop()));
  for (const entry of replicas) {
    entry.cap.remove();
    alive.delete(entry);
  }
}

/**
 * How the dispatcher's and the gateway's points are measured: every replica warms up (uncapped, then under its cap
 * until two rounds agree; a quick run only checks the machinery with one round under the caps), then the points take turns round by round (1, 2, 4, then 4, 2, 1, ...), each round
 * loading a rotating choice of N replicas (the 1-replica point is not always the same process); `measure` runs one
 * round on the replicas it is given.
 */
async function takeTurns<R extends { replica: Replica; cap: CpuCap }>(
  ctx: BenchContext,
  what: string,
  replicas: R[],
  counts: number[],
  rounds: number,
  warmRound: () => Promise<number>,
  { warmUp }: { warmUp: "uncapped-then-capped" | "one-round" },
  measure: (loaded: R[], round: number) => Promise<void>,
): Promise<void> {
  if (warmUp === "uncapped-then-capped") await warmUntilSteady(ctx, `${replicas.length} uncapped ${what}`, warmRound, UNCAPPED_WARM_MIN_MS);
  capAll(replicas);
  if (warmUp === "one-round") ctx.log(`    ${replicas.length} capped ${what}, one warm-up round: ${round2(await warmRound())}/s`);
  else await warmUntilSteady(ctx, `${replicas.length} capped ${what}`, warmRound);
  for (let round = 0; round < rounds; round += 1) {
    for (const count of round % 2 === 0 ? counts : [...counts].reverse()) {
      await measure(Array.from({ length: count }, (_, i) => replicas[(round + i) % replicas.length]!), round);
    }
  }
}

/**
 * The dispatcher's curve: the system's dispatcher is stopped, N capped ones consume the job events.
 *
 * As the gateway's (see gatewayCurve): every replica starts and warms up, uncapped and then capped, and the points
 * take turns round by round over a rotating choice of N replicas. The replicas share one durable consumer, so the
 * ones a round does not load are paused (SIGSTOP) once the system is idle (nothing pending or unacked, outboxes
 * empty: a paused replica holds no event, lease or slot), and the round starts only after their last pull requests
 * expired on the server (CONSUME_PULL_EXPIRES_MS): a pull left open by a paused replica would take events it cannot
 * send. Measured one point after the other instead, three full runs gave 1.61x to 2.52x at 2 replicas: the
 * 1-replica point, measured first, met another machine than the 4-replica one and a replica started later was colder.
 */
async function dispatcherCurve(ctx: BenchContext, rounds: number): Promise<Point[]> {
  const orgIds = ctx.orgs.webhookSpread.map((org) => org.orgId);
  // Events per round and replica: a few seconds of work, so that every point's rounds last about as long (a round
  // of N replicas over the 1-replica count was over in 2-3 s, and its ramp-up and tail moved its rate by +-20%).
  const eventsPerReplica = ctx.sizes.quick ? 150 : 2000;
  const counts = ctx.sizes.quick ? QUICK_REPLICA_COUNTS : REPLICA_COUNTS;
  const replicas: Array<{ replica: Replica; cap: CpuCap }> = [];
  const paused = new Set<Replica>();
  ctx.log(`  webhook-dispatcher: replicas at ${CAPS.dispatcher} core each, ${rounds} round(s) of ${eventsPerReplica} events per replica per point, points taking turns`);
  await ctx.env.system.kill("webhook-dispatcher");
  try {
    await growTo(ctx, "webhook-dispatcher", CAPS.dispatcher, replicas, Math.max(...counts), {}, { capLater: true });
    const warmRound = async () => {
      const burst = await burstDeliveries(ctx, orgIds, (eventsPerReplica * replicas.length) / 2, `${replicas.length} dispatchers, warm-up`);
      return perSecond(burst.events, burst.spanMs);
    };
    const measured = new Map(counts.map((count) => [count, { bursts: [] as Burst[], cpuMs: 0, capacityMs: 0 }]));
    // A quick run (the one `npm test` makes) checks the machinery, not the figures: one warm-up round, under the caps.
    await takeTurns(ctx, "dispatchers", replicas, counts, rounds, warmRound, { warmUp: ctx.sizes.quick ? "one-round" : "uncapped-then-capped" }, async (loaded, round) => {
      await loadOnly(ctx, replicas, loaded, paused, DISPATCHER_IDLE);
      // The replicas' own CPU over the round (publish -> last arrival): a replica that used its whole share was
      // bounded by its cap; one that used less waited on something the replicas share.
      const before = replicasCpuMs(loaded);
      const burst = await burstDeliveries(ctx, orgIds, eventsPerReplica * loaded.length, `round ${round + 1}, ${loaded.length} capped dispatcher(s)`);
      const point = measured.get(loaded.length)!;
      const cpuMs = replicasCpuMs(loaded) - before;
      ctx.log(`      ${round2(cpuMs / burst.events)} ms CPU/delivery in the replicas`);
      point.cpuMs += cpuMs;
      point.capacityMs += burst.endToEndMs * CAPS.dispatcher * loaded.length;
      point.bursts.push(burst);
    });
    return counts.map((count) => {
      const { bursts, cpuMs, capacityMs } = measured.get(count)!;
      const total = bursts.reduce((sum, b) => sum + b.events, 0);
      const point: Point = {
        replicas: count,
        perSecond: perSecond(total, bursts.reduce((sum, b) => sum + b.spanMs, 0)),
        rounds: bursts.map((b) => perSecond(b.events, b.spanMs)),
        cpuMsPerUnit: round2(cpuMs / total),
        capUsed: round2(cpuMs / capacityMs),
      };
      ctx.log(`    ${count} capped dispatcher(s): ${point.cpuMsPerUnit} ms CPU/delivery in the replicas, ${Math.round(point.capUsed! * 100)}% of their cap used`);
      return point;
    });
  } finally {
    // A stopped process would not see the SIGTERM of stopAll.
    for (const replica of paused) replica.child.kill("SIGCONT");
    await stopAll(replicas);
    await ctx.env.system.start("webhook-dispatcher");
  }
}

/** What "idle" means before replicas of a service are paused: these streams' consumers done, and how long their pulls live. */
interface IdleSpec {
  streams: StreamSpec[];
  /** How long a paused replica's pull requests stay open on the server, and a second more. */
  settleMs: number;
}
const DISPATCHER_IDLE: IdleSpec = { streams: [STREAMS.jobEvents, STREAMS.webhookEvents], settleMs: CONSUME_PULL_EXPIRES_MS + 1_000 };
/** A worker's slots pull one dispatch at a time, each pull open 2 s (services/worker/src/dispatch/consume-dispatches.ts). */
const WORKER_IDLE: IdleSpec = { streams: [STREAMS.jobDispatch, STREAMS.jobEvents, STREAMS.webhookEvents], settleMs: 3_000 };

/**
 * Leaves only `loaded` of `replicas` running: the others are paused (SIGSTOP) once the system is idle, and this
 * resolves after the pull requests they left on the server expired and the system is still idle (pause-while-idle.ts).
 * `paused` is kept up to date.
 */
async function loadOnly(ctx: BenchContext, replicas: Array<{ replica: Replica }>, loaded: Array<{ replica: Replica }>, paused: Set<Replica>, idle: IdleSpec): Promise<void> {
  const wanted = new Set(loaded.map(({ replica }) => replica));
  for (const replica of [...paused].filter((candidate) => wanted.has(candidate))) {
    replica.child.kill("SIGCONT");
    paused.delete(replica);
  }
  const toPause = replicas.map(({ replica }) => replica).filter((replica) => !wanted.has(replica) && !paused.has(replica));
  await pauseWhileIdle(
    toPause.map((replica) => replica.child),
    {
      waitIdle: (timeoutMs?: number) => quiesce(ctx.bus, ctx.env.databaseUrl, idle.streams, timeoutMs === undefined ? {} : { timeoutMs }),
      settleMs: idle.settleMs,
    },
  );
  for (const replica of toPause) paused.add(replica);
}

/**
 * The worker's curve: the system's worker is stopped, N capped ones take the dispatches.
 *
 * The points take turns as the dispatcher's do (see dispatcherCurve): the replicas share one durable consumer, so the
 * ones a round does not load are paused while the system is idle, after their pull requests expired. Measured one
 * point after the other (1, 1, 2, 2, 4, 4), a run on a host whose speed drifted gave 1.74x at 2 replicas and 4.68x at 4
 * (2026-12-01, bench/findings.md "Twenty-seventh round"): the 4-replica rounds, measured last, met a faster machine.
 */
async function workerCurve(ctx: BenchContext, rounds: number): Promise<Point[]> {
  const dir = await mkdtemp(join(tmpdir(), "rb-bench-capped-"));
  const clip = join(dir, "clip4s.mp4");
  await run("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc2=duration=4:size=640x360:rate=25", "-f", "lavfi", "-i", "sine=duration=4", "-c:v", "libx264", "-preset", "veryfast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", clip]);
  const source = ctx.inputs.publish("capped-clip4s.mp4", clip);
  // Jobs per round: enough to keep 4 replicas (2 jobs each at a time) busy for a while.
  const jobs = 16;
  const counts = ctx.sizes.quick ? QUICK_REPLICA_COUNTS : REPLICA_COUNTS;
  const replicas: Array<{ replica: Replica; cap: CpuCap }> = [];
  const paused = new Set<Replica>();
  ctx.log(`  worker: replicas at ${CAPS.worker} core each, ${rounds} round(s) of ${jobs} transcodes per point, points taking turns`);
  await ctx.env.system.kill("worker");
  try {
    await growTo(ctx, "worker", CAPS.worker, replicas, Math.max(...counts), {}, { capLater: true });
    // ffmpeg does the work, not the worker's JIT: one round on every replica warms the caches and the input's server.
    const warmRound = async () => {
      await loadOnly(ctx, replicas, replicas, paused, WORKER_IDLE);
      return perSecondFine(replicas.length * 2, await transcodeRound(ctx, source, replicas.length * 2));
    };
    const measured = new Map(counts.map((count) => [count, { rates: [] as number[], total: 0, spanMs: 0 }]));
    await takeTurns(ctx, "workers", replicas, counts, rounds, warmRound, { warmUp: "one-round" }, async (loaded, round) => {
      await loadOnly(ctx, replicas, loaded, paused, WORKER_IDLE);
      const span = await transcodeRound(ctx, source, jobs);
      const point = measured.get(loaded.length)!;
      point.rates.push(perSecondFine(jobs, span));
      point.total += jobs;
      point.spanMs += span;
      ctx.log(`    round ${round + 1}, ${jobs} transcodes, ${loaded.length} capped worker(s): ${round2(perSecondFine(jobs, span))} jobs/s`);
    });
    return counts.map((count) => {
      const { rates, total, spanMs } = measured.get(count)!;
      return { replicas: count, perSecond: perSecondFine(total, spanMs), rounds: rates };
    });
  } finally {
    // A stopped process would not see the SIGTERM of stopAll.
    for (const replica of paused) replica.child.kill("SIGCONT");
    await stopAll(replicas);
    await ctx.env.system.start("worker");
    await rm(dir, { recursive: true, force: true });
  }
}

const perSecondFine = (count: number, ms: number) => count / Math.max(0.001, ms / 1000);

/** Submits `jobs` transcodes at once and resolves the span from the first start to the last completion (ms). */
async function transcodeRound(ctx: BenchContext, source: string, jobs: number): Promise<number> {
  const headers = { authorization: `Bearer ${ctx.orgs.main.key}`, "content-type": "application/json" };
  const ids = await Promise.all(
    Array.from({ length: jobs }, async () => {
      const response = await fetch(`${ctx.gatewayUrl}/jobs`, { method: "POST", headers, body: JSON.stringify({ type: "transcode", inputs: { source }, params: { preset: "veryfast" } }) });
      if (response.status !== 201) throw new Error(`POST /jobs answered ${response.status}: ${await response.text()}`);
      return ((await response.json()) as { data: { id: string } }).data.id;
    }),
  );
  const deadline = Date.now() + 600_000;
  const done = new Map<string, { startedAt: number; completedAt: number }>();
  while (done.size < ids.length) {
    if (Date.now() > deadline) throw new Error(`${ids.length - done.size} transcodes not done after 10 minutes`);
    await new Promise((resolve) => setTimeout(resolve, 250));
    for (const id of ids.filter((candidate) => !done.has(candidate))) {
      const job = ((await (await fetch(`${ctx.gatewayUrl}/jobs/${id}`, { headers })).json()) as { data: { status: string; timing: { startedAt: number | null; completedAt: number | null }; error?: unknown } }).data;
      if (job.status === "failed" || job.status === "cancelled") throw new Error(`transcode ${id} ${job.status}: ${JSON.stringify(job.error)}`);
      if (job.status === "completed") done.set(id, { startedAt: job.timing.startedAt!, completedAt: job.timing.completedAt! });
    }
  }
  const times = [...done.values()];
  return Math.max(...times.map((t) => t.completedAt)) - Math.min(...times.map((t) => t.startedAt));
}

/**
 * The gateway's curve: N capped gateways beside the system's (idle) one, each under its own load generator.
 *
 * All replicas start and warm up together, and the points then take turns round by round (1, 2, 4, then 4, 2, 1,
 * ...), each round loading N replicas of a rotating order. They warm up uncapped, then again under their caps: a
 * gateway that compiles its hot paths at 0.15 core (V8's compiler threads are in its group too) was still getting
 * faster after three minutes of load (its 1-replica rounds 373 -> 822 req/s at 0.28 ms of CPU per request, against
 * 0.14-0.17 ms warm), which measures its JIT, not its design; a production replica warms at full speed. Measured one point after the other, the same
 * code gave 1.5x, 1.77x and 2.16x at 2 replicas in three runs of one evening: a point measured a minute later than
 * another met a different machine (the load generators, Redis and the jobs service share the two cores with the
 * replicas) and a replica started later was less warm. Taking turns gives every point the same machine and the same
 * warm replicas, as the peers' benchmark does for its senders.
 */
async function gatewayCurve(ctx: BenchContext, rounds: number): Promise<Point[]> {
  const auth = { authorization: `Bearer ${ctx.orgs.main.key}` };
  const job = await fetch(`${ctx.gatewayUrl}/jobs`, {
    method: "POST",
    headers: { ...auth, "content-type": "application/json" },
    body: JSON.stringify({ type: "extract.metadata", inputs: { source: ctx.inputs.clipUrl } }),
  }).then(async (response) => ((await response.json()) as { data: { id: string } }).data);
  const seconds = ctx.sizes.quick ? 2 : 4;
  // Per replica: enough connections to keep one capped gateway busy.
  const connections = 16;
  const counts = ctx.sizes.quick ? QUICK_REPLICA_COUNTS : REPLICA_COUNTS;
  const replicas: Array<{ replica: Replica; cap: CpuCap }> = [];
  ctx.log(`  gateway: replicas at ${CAPS.gateway} core each, GET /jobs/{id}, ${connections} connections per replica, ${rounds} round(s) of ${seconds} s per point, points taking turns`);
  try {
    await growTo(ctx, "gateway", CAPS.gateway, replicas, Math.max(...counts), {}, { capLater: true });
    const load = (loaded: Array<{ replica: Replica }>, durationSeconds: number) =>
      Promise.all(loaded.map(({ replica }) => runLoad({ kind: "http", url: `http://127.0.0.1:${replica.env.GATEWAY_PORT}/jobs/${job.id}`, method: "GET", headers: auth, connections, durationSeconds }, { graceMs: 180_000 })));
    const warmRound = async () => (await load(replicas, 2)).reduce((sum, result) => sum + result.perSecond, 0);
    const measured = new Map(counts.map((count) => [count, { rates: [] as number[], cpuMs: 0, requests: 0 }]));
    await takeTurns(ctx, "gateways", replicas, counts, rounds, warmRound, { warmUp: "uncapped-then-capped" }, async (loaded, round) => {
      const before = loaded.map((entry) => replicasCpuMs([entry]));
      const results = await load(loaded, seconds);
      const point = measured.get(loaded.length)!;
      const used = loaded.map((entry, i) => replicasCpuMs([entry]) - before[i]!);
      point.cpuMs += used.reduce((sum, ms) => sum + ms, 0);
      point.requests += results.reduce((sum, result) => sum + result.perSecond * seconds, 0);
      const merged = results.reduce((sum, result) => sum + result.perSecond, 0);
      const errors = results.reduce((sum, result) => sum + result.errors + Object.values(result.non2xx ?? {}).reduce((a, b) => a + b, 0), 0);
      if (errors > 0) ctx.log(`    ${errors} errors or non-2xx answers`);
      point.rates.push(merged);
      // Per replica (which one, its rate, its CPU per request): a point's rounds load a rotating choice of replicas.
      const each = loaded.map(({ replica }, i) => `#${replicas.findIndex((entry) => entry.replica === replica)} ${Math.round(results[i]!.perSecond)}/s ${round2(used[i]! / Math.max(1, results[i]!.perSecond * seconds))} ms`);
      ctx.log(`    round ${round + 1}, ${loaded.length} capped gateway(s): ${Math.round(merged)} req/s (p99 ${mergeLoads(results).p99Ms} ms; ${each.join(", ")})`);
    });
    return counts.map((count) => {
      const { rates, cpuMs, requests } = measured.get(count)!;
      const point: Point = {
        replicas: count,
        perSecond: rates.reduce((sum, rate) => sum + rate, 0) / rates.length,
        rounds: rates,
        cpuMsPerUnit: round2(cpuMs / Math.max(1, requests)),
        capUsed: round2(cpuMs / (rounds * seconds * 1000 * CAPS.gateway * count)),
      };
      ctx.log(`    ${count} capped gateway(s): ${point.cpuMsPerUnit} ms CPU/request in the replicas, ${Math.round(point.capUsed! * 100)}% of their cap used`);
      return point;
    });
  } finally {
    await stopAll(replicas);
  }
}
