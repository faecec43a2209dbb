import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import type { WebhookAgent as Agent } from "./post-webhook.js";
import type { AddressPolicy } from "@renderbus/address-guard";
import { GroupCommit, startNotificationListener } from "@renderbus/db";
import { currentTraceHeaders, type Logger } from "@renderbus/telemetry";
import type { DispatcherTables } from "../database.js";
import type { DispatcherMetrics } from "../metrics.js";
import { endpointOfDelivery, type EndpointDirectory } from "../endpoints/endpoint-directory.js";
import type { EndpointHealth } from "../endpoints/endpoint-health.js";
import { DEFAULT_ENDPOINT_ID } from "../endpoints/endpoint-rules.js";
import type { DeliveryRow } from "../deliveries/delivery.js";
import { DELIVERIES_CHANNEL, claimDueDeliveries, earliestDueAt, nextDueAt, postponeLease, releaseLease, skipHeldDelivery } from "../deliveries/delivery-queue.js";
import { recordAttempts, type AttemptToRecord } from "../deliveries/record-attempts.js";
import { claimGatedDeliveries, hasGatedWork, type GatedClaim } from "../deliveries/endpoint-flow.js";
import { traceAttempt } from "./attempt-span.js";
import { postWebhook, type AttemptResult } from "./post-webhook.js";
import { isBlockedAddress } from "./address-guard.js";
import { decideAfterAttempt } from "./retry-schedule.js";

export interface DeliverySenderOptions {
  db: Kysely<DispatcherTables>;
  /** Connection string for the LISTEN connection. */
  databaseUrl: string;
  /** Where each delivery goes: its endpoint's URL, secrets, schedule and state. */
  endpoints: EndpointDirectory;
  /** Disables endpoints that answer 410 or whose deliveries all fail; none in tests that do not need it. */
  health?: EndpointHealth;
  agent: Agent;
  metrics: DispatcherMetrics;
  logger: Logger;
  concurrency: number;
  orgMaxInFlight: number;
  timeoutMs: number;
  retryScheduleMs: readonly number[];
  /** The `extended` schedule endpoints may choose; the seed schedule when omitted. */
  extendedRetryScheduleMs?: readonly number[];
  brand: string;
  pollIntervalMs: number;
  /** How long a claim lasts: above `timeoutMs`, so a live attempt never loses its lease. */
  leaseMs: number;
  /**
   * ALLOW_PRIVATE_ADDRESSES: the agent does not guard connections, so a response (body and headers) is kept only when
   * the address the connection reached is public (a private service's answer is never recorded nor shown).
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
   * Waits for `slots` free attempt slots for a fresh event's deliveries. It gives up (the ticket then holds none, and
   * its deliveries are inserted unleased, for a claim) when no slot of this process has come free for `wait.idleMs`
   * (every attempt hangs on slow receivers), or after `wait.maxMs` in all; while slots keep coming free (a burst, or a
   * replica short of CPU) it keeps waiting. Tickets are served in arrival order; once a slot is free they are counted
   * as taken until `reserve` settles them.
   */
  admit(slots: number, wait: SlotWait): Promise<SlotTicket>;
  /** From now on no event waits for a slot (shutting down): the waiting ones go on at once, without slots. */
  closeAdmissions(): void;
  /**
   * Takes up to `wanted` free attempt slots for fresh deliveries about to be inserted already leased to this replica
   * (insertDeliveries with a lease), counting first the slots `tickets` hold for them; claims leave them alone until
   * `launch` gives back what was not used.
   */
  reserve(wanted: number, tickets?: SlotTicket[]): number;
  /** Attempts `rows`, inserted under this replica's lease into `reserved` slots taken with `reserve`. */
  launch(rows: DeliveryRow[], reserved: number): void;
  /**
   * Runs one attempt of a delivery this process already holds under `leaseToken` and returns its new state.
   * `retryScheduleMs: []` makes it the only attempt (test events).
   */
  attempt(row: DeliveryRow, leaseToken: string, retryScheduleMs?: readonly number[]): Promise<DeliveryRow | undefined>;
  stop(): Promise<void>;
}

/** How long an event waits for attempt slots (DeliverySender.admit). */
export interface SlotWait {
  /** Gives up after this long without any slot coming free. */
  idleMs: number;
  /** Gives up after this long in all (below the consumer's ack wait: the event is unacked while it waits). */
  maxMs: number;
}

/** Attempt slots an event was admitted with (DeliverySender.admit); `reserve` settles them once (then 0). */
export interface SlotTicket {
  slots: number;
}

/** The error of an attempt that had nowhere to go. */
function notConfiguredError(endpointId: string): string {
  return endpointId === DEFAULT_ENDPOINT_ID ? "webhooks are not configured for this organization" : "webhooks are not included in the organization's plan";
}

/**
 * The error of an attempt not sent because the endpoint's signing secret does not open (ResolvedEndpoint.secretProblem).
 * The org sees this; the reason, which names the server's configuration, goes to the log only.
 */
const UNREADABLE_SECRET_ERROR = "not sent: the endpoint's signing secret is unreadable on the server; retry the delivery once that is fixed";

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
  // Waiting for a connection to the host, then the exchange, end inside the lease: no replica takes it over meanwhile.
  const connectionWaitMs = Math.max(1, Math.floor((leaseMs - options.timeoutMs) / 2));
  const stopController = new AbortController();
  const inFlight = new Set<Promise<void>>();
  // Attempts holding a slot: from their start until their answer came (or until recorded, when as many records wait).
  let sending = 0;
  // Answered attempts whose record has not committed yet, holding no slot (at most options.concurrency).
  let recording = 0;
  // Slots promised to deliveries being inserted under our lease (reserve -> launch): not free for claims.
  let reserved = 0;
  // Slots of admitted events not yet settled by reserve (admit -> reserve): not free for claims either.
  let admitted = 0;
  // Fresh events waiting for a slot (admit), in arrival order.
  const waiters: Array<{ wanted: number; ticket: SlotTicket; resolve(ticket: SlotTicket): void; timer: NodeJS.Timeout | undefined }> = [];
  // When an attempt last gave its slot back: events keep waiting for a slot while slots keep coming free.
  let slotLastFreedAt = Date.now();
  // The claim loop has due work it found no slot for: the next free slot is its, not a waiting event's.
  let claimWanted = false;
  let admitting = true;
  let stopped = false;
  let pending = true;
  let wakeUp: (() => void) | undefined;
  const wake = () => {
    pending = true;
    wakeUp?.();
  };
  const closeAdmissions = () => {
    admitting = false;
    for (const waiter of waiters.splice(0)) {
      clearTimeout(waiter.timer);
      waiter.resolve(waiter.ticket);
    }
  };
  const freeSlots = () => options.concurrency - sending - reserved - admitted;
  /** Hands free slots to waiting events, first come first served (unless the claim loop asked for one first). */
  const admitWaiting = () => {
    while (waiters.length > 0 && !claimWanted && freeSlots() > 0) {
      const waiter = waiters.shift()!;
      clearTimeout(waiter.timer);
      waiter.ticket.slots = waiter.wanted;
      admitted += waiter.wanted;
      waiter.resolve(waiter.ticket);
    }
  };
  /**
   * A slot came free. With events waiting for one it goes to them: a fresh delivery is then inserted already leased
   * instead of inserted due and claimed (a second statement and row version); otherwise, or when the claim loop has
   * due work waiting, the loop claims.
   */
  const slotFreed = () => {
    if (waiters.length === 0 || claimWanted) wake();
    else admitWaiting();
  };

  const listener = await startNotificationListener({ connectionString: options.databaseUrl, channel: DELIVERIES_CHANNEL, onNotify: wake, logger });

  // Attempts that finish together are recorded in one transaction: one commit per batch, not per delivery.
  const recorder = new GroupCommit<AttemptToRecord, DeliveryRow | undefined>((attempts) => recordAttempts(db, attempts), options.concurrency);

  /** `notBefore`: a rate-limited endpoint's start slot (endpoint-flow.ts), waited for once everything else is ready. */
  const attemptOnce = async (
    row: DeliveryRow,
    leaseToken: string,
    retryScheduleMs?: readonly number[],
    notBefore?: number,
    answered?: () => void,
  ): Promise<DeliveryRow | undefined> => {
    // A child logger serializes its bindings when made: only make one for a line that will be written.
    const log = () => logger.child({ deliveryId: row.id, orgId: row.org_id, jobId: row.job_id ?? undefined, event: row.event });
    let org;
    try {
      org = await options.endpoints.get(row.org_id);
    } catch (error) {
      log().warn({ err: error }, "webhook target unavailable; delivery postponed");
      await postponeLease(db, row.id, leaseToken, Date.now() + TARGET_UNAVAILABLE_BACKOFF_MS);
      return undefined;
    }
    const attemptNumber = row.attempts + 1;
    const endpoint = org.target.plan.webhooks ? endpointOfDelivery(org, row) : undefined;
    const deleted = org.target.plan.webhooks && !endpoint && row.endpoint_id !== DEFAULT_ENDPOINT_ID;
    if ((endpoint && !endpoint.enabled) || deleted) {
      // Its endpoint was disabled (or deleted) while it waited: stored `skipped`, like the deliveries created from now on.
      return skipHeldDelivery(db, row.id, leaseToken);
    }
    const url = endpoint ? endpoint.url : row.url;
    // A secret that does not open fails the delivery for good, unsent (never unsigned): a retry cannot open it either,
    // and the receiver is not at fault, so it does not count towards disabling the endpoint. docs/operations.md.
    const secretProblem = endpoint?.secretProblem;
    if (secretProblem !== undefined) log().error({ endpointId: endpoint!.id, reason: secretProblem }, "endpoint secret cannot be opened; delivery failed unsent");
    const schedule =
      secretProblem !== undefined
        ? []
        : (retryScheduleMs ?? (endpoint?.retrySchedule === "extended" ? (options.extendedRetryScheduleMs ?? options.retryScheduleMs) : options.retryScheduleMs));
    const [secret, ...previousSecrets] = endpoint?.secrets ?? [];
    // A loop: a timer can fire a millisecond before Date.now() reaches its time, and no attempt starts before its slot.
    while (notBefore !== undefined && notBefore > Date.now()) {
      await waitUnlessStopped(notBefore - Date.now(), stopController.signal);
      if (stopController.signal.aborted) {
        await releaseLease(db, row.id, leaseToken).catch(() => undefined);
        return undefined;
      }
    }
    const result = endpoint && secretProblem === undefined
      ? await postWebhook(
          options.agent,
          { url: endpoint.url, body: row.body, event: row.event, deliveryId: row.id, attempt: attemptNumber, secret, previousSecrets, brand: options.brand, sequence: row.sequence, tenant: row.org_id },
          { timeoutMs: options.timeoutMs, connectionWaitMs, abort: stopController.signal },
        )
      : { startedAt: Date.now(), latencyMs: 0, succeeded: false, responseStatus: null, error: endpoint ? UNREADABLE_SECRET_ERROR : notConfiguredError(row.endpoint_id), responseExcerpt: null, requestHeaders: null, responseHeaders: null, retryAfterMs: null, remoteAddress: null };
    if (stopController.signal.aborted) {
      // Shutting down mid-attempt: give the delivery back so a replica (or our restart) sends it again.
      await releaseLease(db, row.id, leaseToken).catch(() => undefined);
      return undefined;
    }
    answered?.();
    // What a private target (let through by ALLOW_PRIVATE_ADDRESSES) answered, body and headers, is not kept.
    const { responseExcerpt, responseHeaders } = keptResponse(result, options);
    const gone = result.responseStatus === 410;
    const next = decideAfterAttempt(row.chain_attempts + 1, { succeeded: result.succeeded, finishedAt: Date.now(), retryAfterMs: result.retryAfterMs, gone }, schedule);
    const updated = await recorder.submit({
      delivery: row,
      leaseToken,
      traceHeaders: currentTraceHeaders(),
      attempt: {
        attempt: attemptNumber,
        startedAt: result.startedAt,
        slotAt: notBefore,
        responseStatus: result.responseStatus,
        error: result.error,
        latencyMs: result.latencyMs,
        responseExcerpt,
        requestHeaders: result.requestHeaders,
        responseHeaders,
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
    if (updated && endpoint && options.health && secretProblem === undefined) {
      // Best effort: a missed check is made again by the endpoint's next failure.
      const check = gone ? options.health.gone(row.org_id, endpoint.id) : next.status === "failed" ? options.health.failedForGood(row.org_id, endpoint.id) : undefined;
      await check?.catch((error: unknown) => log().warn({ err: error }, "endpoint health check failed"));
    }
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
  const attempt = (row: DeliveryRow, leaseToken: string, retryScheduleMs?: readonly number[], notBefore?: number, answered?: () => void) =>
    traceAttempt(row, () => attemptOnce(row, leaseToken, retryScheduleMs, notBefore, answered));

  const leaseToken = randomUUID();
  /** Attempts `row` now, or at `notBefore` (a rate-limited endpoint's slot, see slotStart). */
  const start = (row: DeliveryRow, notBefore?: number) => {
    sending += 1;
    let holdsSlot = true;
    let countedRecording = false;
    const freeSlot = () => {
      if (!holdsSlot) return;
      holdsSlot = false;
      sending -= 1;
      slotLastFreedAt = Date.now();
      slotFreed();
    };
    // The answer is in: the slot goes to the next attempt while this one's record waits for its group, unless as
    // many records as slots wait already (then it keeps the slot: records are not allowed to pile up).
    const answered = () => {
      if (recording >= options.concurrency) return;
      recording += 1;
      countedRecording = true;
      freeSlot();
    };
    const task = attempt(row, leaseToken, undefined, notBefore, answered)
      .then(() => undefined)
      .catch((error: unknown) => logger.error({ err: error, deliveryId: row.id }, "delivery attempt failed to record"))
      .finally(() => {
        inFlight.delete(task);
        if (countedRecording) recording -= 1;
        freeSlot();
      });
    inFlight.add(task);
  };

  const loop = (async () => {
    let failures = 0;
    while (!stopped) {
      if (!pending) {
        const now = Date.now();
        let dueAt = await nextDueAt(db, now).catch(() => undefined);
        // A wake-up that arrived during a query must not be slept through.
        while (!pending && !stopped) {
          const sleptAt = Date.now();
          const sleepMs = Math.min(options.pollIntervalMs, dueAt === undefined ? Infinity : Math.max(0, dueAt - sleptAt));
          const timedOut = await new Promise<boolean>((resolve) => {
            const timer = setTimeout(() => resolve(true), sleepMs);
            wakeUp = () => {
              clearTimeout(timer);
              resolve(false);
            };
          });
          wakeUp = undefined;
          if (!timedOut || pending || stopped) break;
          // The safety-net poll (a NOTIFY missed, another replica's retry, a lease run out): one statement says whether
          // anything is due; an idle replica claims nothing, so it pays one round trip a poll instead of three.
          const earliest = await earliestDueAt(db).catch(() => Date.now());
          if (earliest !== undefined && earliest <= Date.now()) break;
          dueAt = earliest;
        }
        pending = true;
        continue;
      }
      pending = false;
      const free = freeSlots();
      if (free <= 0) {
        // A finishing attempt wakes us, before any waiting event is admitted: due work (a retry, an org back under
        // its cap, another replica's backlog) is not starved by a stream of fresh events.
        claimWanted = true;
        await new Promise<void>((resolve) => (wakeUp = resolve));
        wakeUp = undefined;
        pending = true;
        continue;
      }
      try {
        // FIFO and rate-limited endpoints first (one claim each per endpoint, few rows), then everything else.
        const gated = (await hasGatedWork(db)) ? await claimGatedDeliveries(db, { limit: free, orgMaxInFlight: options.orgMaxInFlight, leaseMs, leaseToken }) : [];
        for (const claim of gated) start(claim.row, slotStart(claim));
        const claimed = await claimDueDeliveries(db, { limit: free - gated.length, orgMaxInFlight: options.orgMaxInFlight, leaseMs, leaseToken });
        failures = 0;
        for (const row of claimed.rows) start(row);
        // There may be more due: every slot was filled, or the claim walked past a capped org's or a gated endpoint's
        // backlog and its bounds may have left rows behind (it made progress, so claiming again cannot spin).
        if (gated.length + claimed.rows.length === free || claimed.walked) pending = true;
      } catch (error) {
        failures += 1;
        logger.warn({ err: error, failures }, "claiming due deliveries failed; retrying");
        await new Promise((resolve) => setTimeout(resolve, Math.min(100 * 2 ** failures, 5000)));
        pending = true;
      } finally {
        claimWanted = false;
        // What the claim left free goes to the events waiting for a slot.
        admitWaiting();
      }
    }
  })();

  return {
    wake,
    lease: { token: leaseToken, ms: leaseMs, orgMaxInFlight: options.orgMaxInFlight },
    admit(slots, { idleMs, maxMs }) {
      const ticket: SlotTicket = { slots: 0 };
      if (!admitting || slots <= 0) return Promise.resolve(ticket);
      return new Promise<SlotTicket>((resolve) => {
        const waiter: (typeof waiters)[number] = { wanted: slots, ticket, resolve, timer: undefined };
        waiters.push(waiter);
        admitWaiting();
        if (waiters.at(-1) !== waiter) return;
        const since = Date.now();
        // Giving up on a replica whose slots do come free, only slower than events arrive (short of CPU, say), would
        // send its events down the dearer claim path and slow it further: only a replica whose slots are all stuck
        // (no slot freed for idleMs) or an event near its ack wait (maxMs) gives up. Then it is inserted unleased.
        const check = () => {
          const now = Date.now();
          const idleFor = now - Math.max(since, slotLastFreedAt);
          if (idleFor < idleMs && now - since < maxMs) {
            waiter.timer = setTimeout(check, Math.min(idleMs - idleFor, since + maxMs - now));
            return;
          }
          waiters.splice(waiters.indexOf(waiter), 1);
          resolve(ticket);
        };
        waiter.timer = setTimeout(check, Math.min(idleMs, maxMs));
      });
    },
    reserve(wanted, tickets = []) {
      let settled = 0;
      for (const ticket of tickets) {
        settled += ticket.slots;
        ticket.slots = 0;
      }
      admitted -= settled;
      const taken = stopped ? 0 : Math.max(0, Math.min(wanted, freeSlots()));
      reserved += taken;
      // Admitted slots this insert does not take (deliveries skipped, gated, or over their org's cap) are free again.
      if (settled > taken) slotFreed();
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
      // Slots the insert did not use are free again.
      if (rows.length < slots) slotFreed();
    },
    attempt,
    closeAdmissions,
    async stop() {
      stopped = true;
      closeAdmissions();
      stopController.abort();
      wakeUp?.();
      await loop;
      await Promise.allSettled(inFlight);
      await listener.stop();
    },
  };
}

/**
 * The response (body and headers) to record with an attempt: only one that came from an address the SSRF guard
 * allows. With the guard on (the default) every answered attempt's connection passed it at connect time; with
 * ALLOW_PRIVATE_ADDRESSES the address the connection actually reached (`remoteAddress`) is judged, so an internal
 * service's answer never reaches the org. The name is never looked up again: a second answer could differ from the
 * one connected to (DNS rebinding), and an unknown address keeps nothing.
 */
export function keptResponse(
  { responseExcerpt, responseHeaders, remoteAddress }: Pick<AttemptResult, "responseExcerpt" | "responseHeaders" | "remoteAddress">,
  { allowPrivateAddresses = false, addressPolicy = isBlockedAddress }: Pick<DeliverySenderOptions, "allowPrivateAddresses" | "addressPolicy">,
): Pick<AttemptResult, "responseExcerpt" | "responseHeaders"> {
  const allowed = !allowPrivateAddresses || (remoteAddress !== null && !addressPolicy(remoteAddress));
  return allowed ? { responseExcerpt, responseHeaders } : { responseExcerpt: null, responseHeaders: null };
}

/** Resolves after `ms`, or at once when `signal` aborts. */
function waitUnlessStopped(ms: number, signal: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal.aborted) return resolve();
    const done = () => {
      clearTimeout(timer);
      signal.removeEventListener("abort", done);
      resolve();
    };
    const timer = setTimeout(done, ms);
    signal.addEventListener("abort", done);
  });
}

/**
 * When a claimed delivery's attempt may start, on this process's clock. The slot is a time on PostgreSQL's clock:
 * used as is (every replica then starts its attempts at the slots' exact times, however late the claim's answer came),
 * unless this clock disagrees with it by more than a second, where the delay from the claim is used instead.
 */
export function slotStart({ delayMs, slotAt }: GatedClaim, now = Date.now()): number | undefined {
  if (slotAt === null) return undefined;
  const byDelay = now + delayMs;
  return Math.abs(slotAt - byDelay) <= 1000 ? slotAt : byDelay;
}
