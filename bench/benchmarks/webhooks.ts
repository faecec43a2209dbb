import type { BenchContext } from "../context.js";
import { burstDeliveries, isFirstAttempt, perSecond, settleDispatcher, type Burst } from "../dispatcher-bursts.js";
import { mergeLoads, takeTurns } from "../load/interleave.js";
import { runLoad } from "../load/run-load.js";
import { startReplica, type Replica } from "../replicas.js";
import type { Received } from "../receiver.js";
import { atLeast, below, percent, type BenchmarkResult, type TargetCheck } from "../result.js";
import { round1, round2, summarize, type LatencySummary } from "../stats.js";
import { SyntheticEvents } from "../synthetic-events.js";

/** The dispatcher's default attempts in flight per process (DISPATCHER_CONCURRENCY). */
const DISPATCHER_CONCURRENCY = 64;

interface Throughput {
  replicas: number;
  events: number;
  /** First attempt received -> last received, over every round. */
  deliveriesPerSecond: number;
  /** First event published -> last attempt received, over every round. */
  endToEndPerSecond: number;
  rounds: Burst[];
}

interface Latency {
  replicas: number;
  published: number;
  publishedPerSecond: number;
  delivered: number;
  lag: LatencySummary;
}

/** One round of the latency measurement: events at a steady rate, and each one's lag. */
interface Paced {
  published: number;
  perSecond: number;
  lagsMs: number[];
}

function throughputOf(replicas: number, rounds: Burst[]): Throughput {
  const events = rounds.reduce((sum, r) => sum + r.events, 0);
  return {
    replicas,
    events,
    deliveriesPerSecond: perSecond(events, rounds.reduce((sum, r) => sum + r.spanMs, 0)),
    endToEndPerSecond: perSecond(events, rounds.reduce((sum, r) => sum + r.endToEndMs, 0)),
    rounds,
  };
}

function latencyOf(replicas: number, rounds: Paced[]): Latency {
  const published = rounds.reduce((sum, r) => sum + r.published, 0);
  const lags = rounds.flatMap((r) => r.lagsMs);
  return { replicas, published, publishedPerSecond: Math.round(rounds.reduce((sum, r) => sum + r.perSecond, 0) / rounds.length), delivered: lags.length, lag: summarize(lags) };
}

const firstAttempts = (prefix: string) => (received: Received[]) => received.filter(isFirstAttempt(prefix));

/**
 * Benchmarks 4 and 5 (issue 6) on synthetic `job.running` events: deliveries/s against a bare POST loop to the same
 * receiver, and event -> first attempt lag at a steady rate, each with 1 and then 2 dispatcher replicas.
 */
export async function benchWebhooks(ctx: BenchContext): Promise<BenchmarkResult[]> {
  const orgIds = ctx.orgs.webhook.map((org) => org.orgId);
  const { rounds } = ctx.sizes;
  const throughput: Throughput[] = [];
  const latency: Latency[] = [];

  const burst = (replicas: number): Promise<Burst> => burstDeliveries(ctx, orgIds, ctx.sizes.throughputEvents, `${replicas} dispatcher(s)`);

  const paced = async (replicas: number): Promise<Paced> => {
    await settle();
    const events = new SyntheticEvents(ctx.bus, orgIds);
    ctx.receiver.reset();
    const { published, perSecond: achieved } = await events.paced(ctx.sizes.eventsPerSecond, ctx.sizes.latencySeconds);
    const pick = firstAttempts(events.jobIdPrefix);
    await ctx.receiver.waitFor(isFirstAttempt(events.jobIdPrefix), published, 120_000);
    const lagsMs = pick(ctx.receiver.received).map((r) => r.receivedAt - (events.publishedAt(r.body.jobId ?? "") ?? r.receivedAt));
    const lag = summarize(lagsMs);
    ctx.log(`    ${published} events at ${achieved}/s, ${replicas} dispatcher(s): lag p50 ${lag.p50} ms, p99 ${lag.p99} ms`);
    return { published, perSecond: achieved, lagsMs };
  };
  const measureLatency = async (replicas: number): Promise<Latency> => {
    ctx.log(`  event -> first attempt at ${ctx.sizes.eventsPerSecond}/s, ${ctx.sizes.latencyRounds} rounds of ${ctx.sizes.latencySeconds} s, ${replicas} dispatcher(s)`);
    const { runs } = await takeTurns(ctx.sizes.latencyRounds, { runs: () => paced(replicas) });
    return latencyOf(replicas, runs);
  };

  const baselineLoad = async () => {
    await settle();
    ctx.receiver.reset();
    const result = await runLoad({
      kind: "post-loop",
      url: ctx.receiver.url,
      concurrency: DISPATCHER_CONCURRENCY,
      count: ctx.sizes.throughputEvents,
      headers: {
        "content-type": "application/json",
        "user-agent": "Renderbus-Webhooks/1.0",
        "x-renderbus-event": "baseline",
        "x-renderbus-attempt": "1",
        "x-renderbus-signature": `sha256=${"0".repeat(64)}`,
      },
      body: JSON.stringify({ event: "job.running", jobId: "job_baseline", type: "extract.metadata", timing: { createdAt: 0, startedAt: 0 } }),
    });
    ctx.log(`    bare POST loop: ${Math.round(result.perSecond)}/s`);
    return result;
  };

  // Warm the target cache, connections and JIT so a measurement does not pay start-up costs (run again once the
  // second replica is up: it starts cold).
  const warmUp = async (events: number) => {
    const warm = new SyntheticEvents(ctx.bus, orgIds);
    await warm.burst(events);
    await ctx.receiver.waitFor(isFirstAttempt(warm.jobIdPrefix), events, 60_000);
  };
  const warmUpEvents = Math.min(1000, ctx.sizes.throughputEvents / 5);
  await warmUp(warmUpEvents);

  const settle = () => settleDispatcher(ctx);

  ctx.log(`  deliveries/s with 1 dispatcher and the bare POST loop (concurrency ${DISPATCHER_CONCURRENCY}) taking turns: ${rounds} rounds of ${ctx.sizes.throughputEvents} events`);
  // Unmeasured: the receiver shares the bench's process, and its first burst at full rate ran ~20% below the next.
  await baselineLoad();
  const single = await takeTurns(rounds, { baseline: baselineLoad, dispatcher: () => burst(1) });
  const baseline = mergeLoads(single.baseline);
  throughput.push(throughputOf(1, single.dispatcher));
  latency.push(await measureLatency(1));

  let second: Replica | undefined;
  try {
    ctx.log("  starting a second dispatcher replica");
    second = await startReplica("webhook-dispatcher", ctx.env.system.env, ctx.profileDir ? { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${ctx.profileDir}`] } : {});
    // Longer than the first warm-up: the new replica gets only its share of these, and with one warm-up's worth the
    // first 2-replica round ran ~20% below the next two.
    await warmUp(3 * warmUpEvents);
    ctx.log(`  deliveries/s with 2 dispatchers: ${rounds} rounds of ${ctx.sizes.throughputEvents} events`);
    const { bursts } = await takeTurns(rounds, { bursts: () => burst(2) });
    throughput.push(throughputOf(2, bursts));
    latency.push(await measureLatency(2));
  } finally {
    await second?.stop();
  }

  const [one, two] = throughput as [Throughput, Throughput];
  const scaleOut = round2(two.deliveriesPerSecond / Math.max(1, one.deliveriesPerSecond));
  const receiverBound = two.deliveriesPerSecond >= 0.8 * baseline.perSecond;
  const scaleCheck: TargetCheck = receiverBound
    ? { name: "scale-out 2 vs 1 replicas", target: ">= 1.6x", actual: `${scaleOut}x`, met: null, missedBy: "not judged: 2 replicas reach the receiver's bare rate" }
    : atLeast("scale-out 2 vs 1 replicas", scaleOut, 1.6, "x");

  const throughputResult: BenchmarkResult = {
    id: "webhook-throughput",
    title: "4. Webhook deliveries/s (receiver answers 200 at once)",
    baseline: `bare undici POST loop to the same receiver, concurrency ${DISPATCHER_CONCURRENCY} (the dispatcher's attempts in flight per process), in its own process`,
    columns: ["sender", "events", "deliveries/s", "% of bare POST loop", "publish -> last delivery, /s"],
    rows: [
      ["bare POST loop (baseline)", baseline.ok, Math.round(baseline.perSecond), 100, "-"],
      ...throughput.map((t) => [`dispatcher x${t.replicas}`, t.events, t.deliveriesPerSecond, percent(t.deliveriesPerSecond, baseline.perSecond), t.endToEndPerSecond]),
    ],
    targets: [
      atLeast("deliveries/s vs bare POST loop (1 replica)", percent(one.deliveriesPerSecond, baseline.perSecond), 50, "%"),
      scaleCheck,
    ],
    notes: [
      `Synthetic job.running events spread over ${orgIds.length} starter orgs (the per-org in-flight cap of 8 holds across replicas, so ${orgIds.length} orgs can fill ${(orgIds.length * 8) / DISPATCHER_CONCURRENCY} replicas' ${DISPATCHER_CONCURRENCY} slots). Each delivery is signed, recorded (attempt row + outbox event) and projected onto the job by the jobs service, as in production.`,
      `deliveries/s counts first attempts between the first and the last arrival at the receiver, over ${rounds} rounds; with 1 replica the rounds take turns with the baseline's. Every round starts from an idle system and freshly vacuumed queue tables.`,
    ],
    data: { baseline, throughput, scaleOut, receiverBound },
  };

  const latencyTargets = latency.flatMap((l) => [
    below(`event -> first attempt p50 (${l.replicas} replica${l.replicas > 1 ? "s" : ""})`, round1(l.lag.p50), 50, " ms"),
    below(`event -> first attempt p99 (${l.replicas} replica${l.replicas > 1 ? "s" : ""})`, round1(l.lag.p99), 250, " ms"),
  ]);
  const latencyResult: BenchmarkResult = {
    id: "webhook-latency",
    title: `5. Event -> first webhook attempt at ${ctx.sizes.eventsPerSecond} events/s`,
    baseline: "none (absolute latency)",
    columns: ["dispatchers", "events", "achieved events/s", "delivered", "p50 ms", "p99 ms", "max ms"],
    rows: latency.map((l) => [l.replicas, l.published, l.publishedPerSecond, l.delivered, l.lag.p50, l.lag.p99, l.lag.max]),
    targets: latencyTargets,
    notes: [
      `Lag = arrival at the receiver minus the event's publication, both taken in the bench process (sub-millisecond clock), so it includes JetStream, the consumer, the delivery insert and the HTTP request; ${ctx.sizes.latencyRounds} rounds of ${ctx.sizes.latencySeconds} s per replica count, each from an idle system, p50/p99 over every event.`,
    ],
    data: { latency },
  };
  return [throughputResult, latencyResult];
}
