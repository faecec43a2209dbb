import pg from "pg";
import { STREAMS } from "@renderbus/bus";
import type { BenchContext } from "../context.js";
import { quiesce } from "../quiesce.js";
import { startReplica } from "../replicas.js";
import { cpuSnapshot, cpuSpent, kernelOf, systemProcesses } from "../cpu.js";
import { databaseCommits } from "../pg-commits.js";
import { costliestStatements, RoundStatements, type StatementSample } from "../pg-statements.js";
import { takeTurns } from "../load/interleave.js";
import { startPeerSender, type PeerSender } from "../peers/peer-sender.js";
import type { PeerKind } from "../peers/peer-child.js";
import { atLeast, type BenchmarkResult } from "../result.js";
import { round2 } from "../stats.js";
import { SyntheticEvents } from "../synthetic-events.js";
import { isFirstAttempt, settleDispatcher } from "../dispatcher-bursts.js";

/** The dispatcher's attempts in flight per process (DISPATCHER_CONCURRENCY) and its PostgreSQL pool (DATABASE_MAX_CONNECTIONS). */
const CONCURRENCY = 64;
const POOL_SIZE = 10;
const PEERS: PeerKind[] = ["graphile-worker", "pg-boss"];
/** Tables the peers churn, vacuumed before every round as the dispatcher's are (see settleDispatcher). */
const PEER_TABLES = ["peer_graphile_worker.attempts", "peer_graphile_worker_queue._private_jobs", "peer_pg_boss.attempts", "peer_pg_boss_queue.job"];

type Sender = "dispatcher" | PeerKind;

/** One round of one sender: a burst of webhooks and the CPU every accounted process spent on it. */
interface Round {
  events: number;
  /** First attempt received -> last received. */
  spanMs: number;
  /** CPU ms per group (dispatcher, services, postgres, nats, and each peer process) from the burst to the end of its tail. */
  cpuMs: Record<string, number>;
  /** Transactions committed in the run's database during the round (the quiesce polls' included). */
  commits: number;
}

interface SenderFigures {
  sender: Sender;
  events: number;
  deliveriesPerSecond: number;
  /**
   * ms of CPU per delivery: the sender's own process (and the part of it spent in the kernel), PostgreSQL, NATS, the
   * other services, and their sum.
   */
  perDelivery: { process: number; processKernel: number; postgres: number; nats: number; otherServices: number; total: number };
  /** PostgreSQL transactions committed per delivery (all processes). */
  commitsPerDelivery: number;
  rounds: Round[];
}

const perSecond = (count: number, ms: number) => Math.round(count / Math.max(0.001, ms / 1000));

function figuresOf(sender: Sender, rounds: Round[]): SenderFigures {
  const events = rounds.reduce((sum, r) => sum + r.events, 0);
  const spent = (group: string) => rounds.reduce((sum, r) => sum + (r.cpuMs[group] ?? 0), 0) / Math.max(1, events);
  const ownGroup = sender === "dispatcher" ? "dispatcher" : sender;
  const own = spent(ownGroup);
  const postgres = spent("postgres");
  // For the dispatcher, everything it needs: the other services (the jobs service projects every delivery) and NATS.
  const nats = sender === "dispatcher" ? spent("nats") : 0;
  const otherServices = sender === "dispatcher" ? spent("services") - own : 0;
  return {
    sender,
    events,
    deliveriesPerSecond: perSecond(events, rounds.reduce((sum, r) => sum + r.spanMs, 0)),
    commitsPerDelivery: round2(rounds.reduce((sum, r) => sum + r.commits, 0) / Math.max(1, events)),
    perDelivery: { process: round2(own), processKernel: round2(spent(kernelOf(ownGroup))), postgres: round2(postgres), nats: round2(nats), otherServices: round2(otherServices), total: round2(own + postgres + nats + otherServices) },
    rounds,
  };
}

/**
 * Issue 25: our dispatcher against webhook senders a team would build on a PostgreSQL job queue (bench/peers/), taking
 * turns round by round in the same run, each through the same receiver with 64 attempts in flight, 10 PostgreSQL
 * connections and the same HTTP client settings; and the CPU each spends per delivery, from /proc.
 */
export async function benchWebhookPeers(ctx: BenchContext): Promise<BenchmarkResult> {
  const orgIds = ctx.orgs.webhook.map((org) => org.orgId);
  const count = ctx.sizes.throughputEvents;
  // Warm-up rounds as benchmark 4's: a fifth of a round, at most 1,000 (keeps --quick short).
  const warmUpSize = Math.min(1000, count / 5);
  const peers = new Map<PeerKind, PeerSender>();
  let closeStats = async () => {};
  // --profile: a second dispatcher replica under --cpu-prof takes its share of the deliveries (the profile is written
  // when it stops; the throughput of such a run is not comparable).
  const profiled = ctx.profileDir ? await startReplica("webhook-dispatcher", ctx.env.system.env, { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${ctx.profileDir}`] }) : undefined;
  try {
    for (const kind of PEERS) peers.set(kind, await startPeerSender({ kind, databaseUrl: ctx.env.databaseUrl, concurrency: CONCURRENCY, poolSize: POOL_SIZE, secret: "whsec_YmVuY2ggcGVlciBzZWNyZXQ=" }));
    const system = systemProcesses(ctx.env.namespace);
    const peerPids = Object.fromEntries([...peers].map(([kind, peer]) => [kind, peer.pid]));
    ctx.log(`  processes: ${system.services.map((s) => `${s.name} ${s.pid}`).join(", ")}, postgres ${system.postgres.postmaster}, nats ${system.nats.join(" ")}, ${[...peers].map(([k, p]) => `${k} ${p.pid}`).join(", ")}`);
    const stats = new pg.Client({ connectionString: ctx.env.databaseUrl });
    await stats.connect();
    closeStats = () => stats.end();
    const commits = () => databaseCommits(stats);
    // Each service process on its own too: the dispatcher's rounds log where 'other services' went.
    const servicePids = Object.fromEntries(system.services.map((service) => [`service:${service.name}`, service.pid]));
    const snapshot = () => cpuSnapshot(system, { ...peerPids, ...servicePids });
    // --pg-statements: each measured round's statements, per sender.
    const statements = ctx.pgStatements ? await RoundStatements.open(stats) : undefined;
    const samples = new Map<Sender, StatementSample[]>();

    /**
     * One burst of `size` webhooks: `burst` sends them and resolves their arrival times once its tail is done; the CPU
     * and commits from just before it until then, and (--pg-statements, measured rounds) its statements, reset and read
     * outside that span.
     */
    const measuredRound = async (sender: Sender, measure: boolean, size: number, burst: () => Promise<number[]>): Promise<Round> => {
      ctx.receiver.reset();
      const sampling = statements !== undefined && measure;
      if (sampling) await statements.reset();
      const before = snapshot();
      const commitsBefore = await commits();
      const arrivals = await burst();
      const cpuMs = cpuSpent(before, snapshot());
      const round = { events: size, spanMs: Math.max(...arrivals) - Math.min(...arrivals), cpuMs, commits: (await commits()) - commitsBefore };
      if (sampling) samples.set(sender, [...(samples.get(sender) ?? []), ...(await statements.read())]);
      return round;
    };

    const dispatcherRound = async (measure: boolean): Promise<Round> => {
      await settleDispatcher(ctx, PEER_TABLES);
      const events = new SyntheticEvents(ctx.bus, orgIds);
      const size = measure ? count : warmUpSize;
      let publishedMs = 0;
      const round = await measuredRound("dispatcher", measure, size, async () => {
        const started = performance.now();
        await events.burst(size);
        publishedMs = performance.now() - started;
        await ctx.receiver.waitFor(isFirstAttempt(events.jobIdPrefix), size, 180_000);
        // The tail (announcements relayed, projected by the jobs service) is part of what a delivery costs.
        await quiesce(ctx.bus, ctx.env.databaseUrl, [STREAMS.jobEvents, STREAMS.webhookEvents]);
        return ctx.receiver.received.filter(isFirstAttempt(events.jobIdPrefix)).map((r) => r.receivedAt);
      });
      const { cpuMs } = round;
      const others = Object.keys(servicePids).filter((name) => !name.startsWith("service:webhook-dispatcher")).map((name) => `${name.slice("service:".length)} ${round2((cpuMs[name] ?? 0) / size)}`);
      if (measure) ctx.log(`    dispatcher: ${perSecond(size, round.spanMs)} deliveries/s, ${round2(cpuMs.dispatcher! / size)} ms CPU/delivery in its process (${round2(cpuMs[kernelOf("dispatcher")]! / size)} in the kernel; ${others.join(", ")}; PostgreSQL ${round2(cpuMs.postgres! / size)}, NATS ${round2(cpuMs.nats! / size)}), ${round2(round.commits / size)} commits/delivery (events published in ${Math.round(publishedMs)} ms)`);
      return round;
    };

    const peerRound = async (kind: PeerKind, measure: boolean): Promise<Round> => {
      const peer = peers.get(kind)!;
      await settleDispatcher(ctx, PEER_TABLES);
      const prefix = `job_peer${kind.replace(/[^a-z]/g, "")}${Date.now().toString(36)}_`;
      const size = measure ? count : warmUpSize;
      const round = await measuredRound(kind, measure, size, async () => {
        await peer.burst(size, prefix, ctx.receiver.url);
        await ctx.receiver.waitFor(isFirstAttempt(prefix), size, 180_000);
        await peer.drain();
        return ctx.receiver.received.filter(isFirstAttempt(prefix)).map((r) => r.receivedAt);
      });
      if (measure) ctx.log(`    ${kind}: ${perSecond(size, round.spanMs)} deliveries/s, ${round2(round.cpuMs[kind]! / size)} ms CPU/delivery in its process (${round2(round.cpuMs[kernelOf(kind)]! / size)} in the kernel), ${round2(round.commits / size)} commits/delivery`);
      return round;
    };

    // Warm-up (unmeasured): connections, JIT, the target cache.
    await dispatcherRound(false);
    for (const kind of PEERS) await peerRound(kind, false);

    ctx.log(`  deliveries/s, dispatcher and peers taking turns: ${ctx.sizes.rounds} rounds of ${count} webhooks each`);
    const rounds = await takeTurns<Record<Sender, Round>>(ctx.sizes.rounds, {
      dispatcher: () => dispatcherRound(true),
      "graphile-worker": () => peerRound("graphile-worker", true),
      "pg-boss": () => peerRound("pg-boss", true),
    });
    const figures = (Object.keys(rounds) as Sender[]).map((sender) => figuresOf(sender, rounds[sender]));
    const ours = figures.find((f) => f.sender === "dispatcher")!;
    const best = figures.filter((f) => f.sender !== "dispatcher").sort((a, b) => b.deliveriesPerSecond - a.deliveriesPerSecond)[0]!;
    const ratio = round2(ours.deliveriesPerSecond / Math.max(1, best.deliveriesPerSecond));
    const statementCosts = statements ? figures.map((f) => ({ sender: f.sender, statements: costliestStatements(samples.get(f.sender) ?? [], f.events) })) : undefined;
    for (const { sender, statements: costs } of statementCosts ?? []) {
      ctx.log(`  ${sender}: PostgreSQL statements by execution time per delivery (pg_stat_statements)`);
      for (const cost of costs) ctx.log(`    ${cost.usPerDelivery} us, ${cost.callsPerDelivery} calls: ${cost.query}`);
    }

    return {
      id: "webhook-peers",
      title: "10. Webhook senders side by side: our dispatcher and job-queue peers",
      baseline: `the fastest peer of the run (${best.sender}); every sender takes turns with the others, ${ctx.sizes.rounds} rounds of ${count} webhooks, 64 attempts in flight, 10 PostgreSQL connections, the same receiver`,
      columns: ["sender", "webhooks", "deliveries/s", "x fastest peer", "CPU ms/delivery: sender process", "of it in the kernel", "PostgreSQL", "NATS", "other services", "total", "PostgreSQL commits/delivery"],
      rows: figures.map((f) => [
        f.sender === "dispatcher" ? "Renderbus webhook-dispatcher" : `${f.sender} (bench/peers)`,
        f.events,
        f.deliveriesPerSecond,
        round2(f.deliveriesPerSecond / Math.max(1, best.deliveriesPerSecond)),
        f.perDelivery.process,
        f.perDelivery.processKernel,
        f.perDelivery.postgres,
        f.sender === "dispatcher" ? f.perDelivery.nats : "-",
        f.sender === "dispatcher" ? f.perDelivery.otherServices : "-",
        f.perDelivery.total,
        f.commitsPerDelivery,
      ]),
      targets: [atLeast("dispatcher deliveries/s vs the fastest peer", ratio, 1.3, "x")],
      notes: [
        "Peers (bench/peers/peer-child.ts), each in its own process: a webhook is a job committed to PostgreSQL before it is sent (added in bulk, 256 a statement), every attempt inserts a row into the peer's own attempts table before the job is settled, a failed attempt is retried with the queue's exponential backoff (4 attempts in all). graphile-worker runs with its documented throughput settings (local queue of 65, batched completions), pg-boss with 8 workers x batches of 8 settled per job and LISTEN/NOTIFY. Both use Node's core HTTP client with the dispatcher's socket cap (16) and send the same signed headers.",
        "The dispatcher's webhooks start as job.running events on JetStream (published by the bench, as the jobs service would), so each delivery also costs an ingest (delivery row), an attempt record with its outbox announcement, a NATS publish and the jobs service's projection: the peers do none of those, they only send and record.",
        "deliveries/s: first attempts between the first and the last arrival at the receiver. CPU: utime + stime from /proc/<pid>/stat ('of it in the kernel': stime alone), from just before a burst until its tail is done (dispatcher: JetStream consumers and outboxes idle; peer: queue empty); PostgreSQL counts the postmaster, its live backends and the ones it reaped. 'other services' = the jobs, auth, gateway and worker processes during the dispatcher's rounds (mostly the jobs service projecting the delivery log). The bench process (publisher and receiver) is not counted for anyone.",
        "On a shared machine absolute figures move between runs; compare the ratios within one run.",
        ...(statementCosts
          ? statementCosts.map(({ sender, statements: costs }) => `PostgreSQL statements of ${sender}'s rounds (--pg-statements; execution time per delivery, calls per delivery): ${costs.map((c) => `${c.usPerDelivery} us x${c.callsPerDelivery} \`${c.query.replaceAll("`", "'")}\``).join("; ")}.`)
          : []),
        ...(system.postgres.postmaster === undefined || system.nats.length === 0
          ? ["PostgreSQL and/or NATS were not started by this run (DATABASE_URL / NATS_URL given), so their CPU is not measured: those columns read 0."]
          : []),
      ],
      data: { figures, ratio, best: best.sender, ...(statementCosts ? { statementCosts } : {}), postgresMeasured: system.postgres.postmaster !== undefined, natsMeasured: system.nats.length > 0 },
    };
  } finally {
    for (const peer of peers.values()) await peer.stop().catch(() => undefined);
    await profiled?.stop();
    await closeStats().catch(() => undefined);
  }
}
