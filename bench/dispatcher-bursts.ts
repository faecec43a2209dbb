import pg from "pg";
import { STREAMS } from "@renderbus/bus";
import type { BenchContext } from "./context.js";
import { databaseCommits } from "./pg-commits.js";
import { quiesce } from "./quiesce.js";
import type { Received } from "./receiver.js";
import { SyntheticEvents } from "./synthetic-events.js";

/** One round of a throughput measurement: a burst of events, sent as fast as the stream takes them. */
export interface Burst {
  events: number;
  /** First attempt received -> last received. */
  spanMs: number;
  /** First event published -> last attempt received. */
  endToEndMs: number;
  /** Transactions committed in the run's database over that span (all services'; see databaseCommits). */
  commits: number;
}

export const perSecond = (count: number, ms: number) => Math.round(count / Math.max(0.001, ms / 1000));

export const isFirstAttempt = (prefix: string) => (r: Received) => r.attempt === 1 && r.event === "job.running" && !!r.body.jobId?.startsWith(prefix);

/**
 * Every measurement starts from an idle system (see quiesce) and the same table state: a queue table (deliveries, outbox) updated and deleted
 * thousands of times a second collects dead rows faster than autovacuum (once a minute per database) clears them
 * on a fresh database, so without this whichever measurement ran later paid for the earlier ones' dead rows (the
 * 2-replica runs came last and measured below one replica; see bench/findings.md). `alsoVacuum`: more tables (a peer's).
 */
export async function settleDispatcher(ctx: BenchContext, alsoVacuum: string[] = []): Promise<void> {
  // The previous measurement's tail (its deliveries.updated projections, the outbox relays) finishes first.
  await quiesce(ctx.bus, ctx.env.databaseUrl, [STREAMS.jobEvents, STREAMS.webhookEvents]);
  const client = new pg.Client({ connectionString: ctx.env.databaseUrl });
  await client.connect();
  try {
    const tables = ["dispatcher.deliveries", "dispatcher.outbox", "dispatcher.processed_events", "dispatcher.delivery_attempts", "jobs.outbox", "jobs.webhook_deliveries", ...alsoVacuum];
    await client.query(`vacuum (analyze) ${tables.join(", ")}`);
  } finally {
    await client.end();
  }
}

/**
 * Publishes `count` synthetic job events spread over `orgIds` as fast as the stream takes them and waits until the
 * receiver has every first attempt; the rate is first arrival -> last arrival.
 */
export async function burstDeliveries(ctx: BenchContext, orgIds: string[], count: number, label: string): Promise<Burst> {
  await settleDispatcher(ctx);
  const events = new SyntheticEvents(ctx.bus, orgIds);
  const stats = new pg.Client({ connectionString: ctx.env.databaseUrl });
  await stats.connect();
  try {
    ctx.receiver.reset();
    const commitsBefore = await databaseCommits(stats);
    const started = Date.now();
    await events.burst(count);
    const first = isFirstAttempt(events.jobIdPrefix);
    await ctx.receiver.waitFor(first, count, 180_000);
    const arrivals = ctx.receiver.received.filter(first).map((r) => r.receivedAt);
    const last = Math.max(...arrivals);
    const result: Burst = { events: count, spanMs: last - Math.min(...arrivals), endToEndMs: last - started, commits: (await databaseCommits(stats)) - commitsBefore };
    // Where the round's time went: a tail (the last 1% arriving long after the rest) is a stuck delivery, not a rate.
    const sorted = arrivals.map((at) => at - started).sort((a, b) => a - b);
    const at = (share: number) => (sorted[Math.min(sorted.length - 1, Math.floor(share * sorted.length))]! / 1000).toFixed(1);
    ctx.log(`    ${count} events, ${label}: ${perSecond(count, result.spanMs)} deliveries/s (arrived by ${at(0.5)} s half, ${at(0.9)} s 90%, ${at(0.99)} s 99%, ${at(1)} s all), ${(result.commits / count).toFixed(2)} commits/delivery`);
    return result;
  } finally {
    await stats.end();
  }
}
