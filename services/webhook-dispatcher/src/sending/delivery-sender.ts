import { randomUUID } from "node:crypto";
import pg from "pg";
import type { Kysely } from "kysely";
import type { WebhookAgent as Agent } from "./post-webhook.js";
import type { AddressPolicy } from "@renderbus/address-guard";
import { GroupCommit } from "@renderbus/db";
import { currentTraceHeaders, type Logger } from "@renderbus/telemetry";
import type { DispatcherTables } from "../database.js";
import type { DispatcherMetrics } from "../metrics.js";
import { acceptsWebhooks, type WebhookTargets } from "../targets/webhook-targets.js";
import type { DeliveryRow } from "../deliveries/delivery.js";
import { DELIVERIES_CHANNEL, claimDueDeliveries, nextDueAt, postponeLease, releaseLease } from "../deliveries/delivery-queue.js";
import { recordAttempts, type AttemptToRecord } from "../deliveries/record-attempts.js";
import { traceAttempt } from "./attempt-span.js";
import { postWebhook } from "./post-webhook.js";
import { resolvesOnlyToAllowedAddresses } from "./address-guard.js";
import { decideAfterAttempt } from "./retry-schedule.js";

export interface DeliverySenderOptions {
  db: Kysely<DispatcherTables>;
  /** Connection string for the LISTEN connection. */
  databaseUrl: string;
  targets: WebhookTargets;
  agent: Agent;
  metrics: DispatcherMetrics;
  logger: Logger;
  concurrency: number;
  orgMaxInFlight: number;
  timeoutMs: number;
  retryScheduleMs: readonly number[];
  brand: string;
  pollIntervalMs: number;
  /** How long a claim lasts: above `timeoutMs`, so a live attempt never loses its lease. */
  leaseMs: number;
  /**
   * ALLOW_PRIVATE_ADDRESSES: the agent does not guard connections, so a response body is kept only when the target
   * resolves to public addresses alone (a private service's answer is never recorded nor shown).
   */
  allowPrivateAddresses?: boolean;
  /** Which addresses count as private for that check (tests exempt their receiver); the shared block list by default. */
  addressPolicy?: AddressPolicy;
}

export interface DeliverySender {
  /** Looks for due deliveries now (called right after inserting one: no poll delay). */
  wake(): void;
  /** This replica's lease on deliveries it attempts, and the per-org cap its claims apply. */
  readonly lease: { token: string; ms: number; orgMaxInFlight: number };
  /**
   * Takes up to `wanted` free attempt slots for fresh deliveries about to be inserted already leased to this replica
   * (insertDeliveries with a lease); claims leave them alone until `launch` gives back what was not used.
   */
  reserve(wanted: number): number;
  /** Attempts `rows`, inserted under this replica's lease into `reserved` slots taken with `reserve`. */
  launch(rows: DeliveryRow[], reserved: number): void;
  /**
   * Runs one attempt of a delivery this process already holds under `leaseToken` and returns its new state.
   * `retryScheduleMs: []` makes it the only attempt (test events).
   */
  attempt(row: DeliveryRow, leaseToken: string, retryScheduleMs?: readonly number[]): Promise<DeliveryRow | undefined>;
  stop(): Promise<void>;
}

/** How long the auth service may be down before a claimed delivery is looked at again (no attempt is counted). */
const TARGET_UNAVAILABLE_BACKOFF_MS = 2000;

/**
 * The due-time queue worker. Deliveries wait in Postgres (`next_attempt_at`), so a pending retry holds no slot and
 * survives a crash; this loop claims due rows under a lease, sends them with bounded concurrency (and a per-org cap
 * applied at claim time), and sleeps until the next due time, a NOTIFY from any replica, or a local wake-up.
 */
export async function startDeliverySender(options: DeliverySenderOptions): Promise<DeliverySender> {
  const { db, logger, metrics } = options;
  const { leaseMs } = options;
  const stopController = new AbortController();
  const inFlight = new Set<Promise<void>>();
  // Slots promised to deliveries being inserted under our lease (reserve -> launch): not free for claims.
  let reserved = 0;
  let stopped = false;
  let pending = true;
  let wakeUp: (() => void) | undefined;
  const wake = () => {
    pending = true;
    wakeUp?.();
  };

  const listener = new pg.Client({ connectionString: options.databaseUrl });
  listener.on("error", (error) => logger.warn({ err: error }, "delivery LISTEN connection lost; polling only"));
  listener.on("notification", wake);
  await listener
    .connect()
    .then(() => listener.query(`listen ${DELIVERIES_CHANNEL}`))
    .catch((error) => logger.warn({ err: error }, "delivery LISTEN failed; polling only"));

  // Attempts that finish together are recorded in one transaction: one commit per batch, not per delivery.
  const recorder = new GroupCommit<AttemptToRecord, DeliveryRow | undefined>((attempts) => recordAttempts(db, attempts), options.concurrency);

  const attemptOnce = async (row: DeliveryRow, leaseToken: string, retryScheduleMs = options.retryScheduleMs): Promise<DeliveryRow | undefined> => {
    // A child logger serializes its bindings when made: only make one for a line that will be written.
    const log = () => logger.child({ deliveryId: row.id, orgId: row.org_id, jobId: row.job_id ?? undefined, event: row.event });
    let target;
    try {
      target = await options.targets.get(row.org_id);
    } catch (error) {
      log().warn({ err: error }, "webhook target unavailable; delivery postponed");
      await postponeLease(db, row.id, leaseToken, Date.now() + TARGET_UNAVAILABLE_BACKOFF_MS);
      return undefined;
    }
    const attemptNumber = row.attempts + 1;
    const url = acceptsWebhooks(target) ? target.url : row.url;
    const result = acceptsWebhooks(target)
      ? await postWebhook(
          options.agent,
          { url: target.url, body: row.body, event: row.event, deliveryId: row.id, attempt: attemptNumber, secret: target.secret, brand: options.brand },
          { timeoutMs: options.timeoutMs, abort: stopController.signal },
        )
      : { startedAt: Date.now(), latencyMs: 0, succeeded: false, responseStatus: null, error: "webhooks are not configured for this organization", responseExcerpt: null };
    if (stopController.signal.aborted) {
      // Shutting down mid-attempt: give the delivery back so a replica (or our restart) sends it again.
      await releaseLease(db, row.id, leaseToken).catch(() => undefined);
      return undefined;
    }
    const responseExcerpt = await keptExcerpt(url, result.responseExcerpt, options);
    const next = decideAfterAttempt(row.chain_attempts + 1, { succeeded: result.succeeded, finishedAt: Date.now() }, retryScheduleMs);
    const updated = await recorder.submit({
      delivery: row,
      leaseToken,
      traceHeaders: currentTraceHeaders(),
      attempt: {
        attempt: attemptNumber,
        startedAt: result.startedAt,
        responseStatus: result.responseStatus,
        error: result.error,
        latencyMs: result.latencyMs,
        responseExcerpt,
        status: next.status,
        nextAttemptAt: next.nextAttemptAt,
        url,
      },
    });
    const resultLabel = result.succeeded ? "success" : "failure";
    metrics.attempts.inc({ result: resultLabel });
    metrics.attemptLatency.observe({ result: resultLabel }, result.latencyMs / 1000);
    if (row.first_attempt_at === null) metrics.eventToFirstAttempt.observe(Math.max(0, result.startedAt - row.event_at) / 1000);
    if (next.status !== "pending") metrics.deliveries.inc({ outcome: next.status });
    // Every attempt is recorded in the database; only failures are worth a line at the default level.
    const level = result.succeeded ? "debug" : "info";
    if (logger.isLevelEnabled(level)) {
      log()[level](
        { attempt: attemptNumber, status: next.status, responseStatus: result.responseStatus ?? undefined, error: result.error ?? undefined, latencyMs: result.latencyMs },
        "webhook attempt",
      );
    }
    return updated;
  };

  // Each attempt is a span of the job's trace (the context stored with the delivery).
  const attempt = (row: DeliveryRow, leaseToken: string, retryScheduleMs?: readonly number[]) =>
    traceAttempt(row, () => attemptOnce(row, leaseToken, retryScheduleMs));

  const leaseToken = randomUUID();
  const start = (row: DeliveryRow) => {
    const task = attempt(row, leaseToken)
      .then(() => undefined)
      .catch((error: unknown) => logger.error({ err: error, deliveryId: row.id }, "delivery attempt failed to record"))
      .finally(() => {
        inFlight.delete(task);
        wake();
      });
    inFlight.add(task);
  };

  const loop = (async () => {
    let failures = 0;
    while (!stopped) {
      if (!pending) {
        const now = Date.now();
        const dueAt = await nextDueAt(db, now).catch(() => undefined);
        // A wake-up that arrived during the query above must not be slept through.
        if (pending || stopped) continue;
        const sleepMs = Math.min(options.pollIntervalMs, dueAt === undefined ? Infinity : Math.max(0, dueAt - now));
        await new Promise<void>((resolve) => {
          const timer = setTimeout(resolve, sleepMs);
          wakeUp = () => {
            clearTimeout(timer);
            resolve();
          };
        });
        wakeUp = undefined;
        pending = true;
        continue;
      }
      pending = false;
      const free = options.concurrency - inFlight.size - reserved;
      if (free <= 0) {
        // A finishing attempt wakes us.
        await new Promise<void>((resolve) => (wakeUp = resolve));
        wakeUp = undefined;
        pending = true;
        continue;
      }
      try {
        const claimed = await claimDueDeliveries(db, { limit: free, orgMaxInFlight: options.orgMaxInFlight, leaseMs, leaseToken });
        failures = 0;
        for (const row of claimed) start(row);
        if (claimed.length === free) pending = true; // there may be more due
      } catch (error) {
        failures += 1;
        logger.warn({ err: error, failures }, "claiming due deliveries failed; retrying");
        await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** failures, 5000)));
        pending = true;
      }
    }
  })();

  return {
    wake,
    lease: { token: leaseToken, ms: leaseMs, orgMaxInFlight: options.orgMaxInFlight },
    reserve(wanted) {
      const taken = stopped ? 0 : Math.max(0, Math.min(wanted, options.concurrency - inFlight.size - reserved));
      reserved += taken;
      return taken;
    },
    launch(rows, slots) {
      reserved -= slots;
      if (stopped) {
        // Stopping between the insert and here: hand them to the other replicas (or our restart) at once.
        for (const row of rows) void releaseLease(db, row.id, leaseToken).catch(() => undefined);
        return;
      }
      for (const row of rows) start(row);
      // Slots the insert did not use are free for claims again.
      if (rows.length < slots) wake();
    },
    attempt,
    async stop() {
      stopped = true;
      stopController.abort();
      wakeUp?.();
      await loop;
      await Promise.allSettled(inFlight);
      await listener.end().catch(() => undefined);
    },
  };
}

/**
 * The response body to record with an attempt: only from a target that passed the SSRF guard. With the guard on
 * (the default) every answered attempt did; with ALLOW_PRIVATE_ADDRESSES the target is looked up again and a body is
 * dropped unless every address is public, so an internal service's answer never reaches the org.
 */
export async function keptExcerpt(
  url: string,
  excerpt: string | null,
  { allowPrivateAddresses = false, addressPolicy }: Pick<DeliverySenderOptions, "allowPrivateAddresses" | "addressPolicy">,
): Promise<string | null> {
  // An empty body reveals nothing: no second lookup for it (the common 200 with no body).
  if (excerpt === null || excerpt === "" || !allowPrivateAddresses) return excerpt;
  if (!URL.canParse(url)) return null;
  return (await resolvesOnlyToAllowedAddresses(new URL(url).hostname, addressPolicy)) ? excerpt : null;
}
