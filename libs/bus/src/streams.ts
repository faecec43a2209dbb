import { RetentionPolicy, StorageType, type StreamConfig } from "@nats-io/jetstream";

/** A stream declared in code; created or updated idempotently at start-up by every service that uses it. */
export interface StreamSpec {
  name: string;
  subjects: string[];
  retention?: RetentionPolicy;
  /** Server-side dedup window for `Nats-Msg-Id` (ms). */
  duplicateWindowMs?: number;
  maxAgeMs?: number;
}

const DAY = 24 * 60 * 60 * 1000;

/**
 * Every stream of the system. Subjects are the event contract documented in docs/events.md:
 * - `jobs.events.<event>`: job lifecycle events from the jobs service's outbox (limits retention, 7 days).
 * - `jobs.dispatch.<type>.<jobId>`: work for provider workers, pulled through their one shared durable
 *   ({@link DISPATCH_DURABLE}); work-queue retention: a message is gone once acked.
 * - `auth.events.<event>`: key revocations and org changes, for gateway caches and the dispatcher.
 * - `webhooks.events.<event>`: delivery state changes and batch completions from the dispatcher.
 */
export const STREAMS = {
  jobEvents: { name: "JOBS_EVENTS", subjects: ["jobs.events.>"], duplicateWindowMs: 10 * 60 * 1000, maxAgeMs: 7 * DAY },
  jobDispatch: {
    name: "JOBS_DISPATCH",
    subjects: ["jobs.dispatch.>"],
    retention: RetentionPolicy.Workqueue,
    duplicateWindowMs: 10 * 60 * 1000,
    // A dispatch out of deliveries (`DISPATCH_MAX_DELIVER`) is never acked and would stay in the work queue forever;
    // its job was failed long before (DISPATCHED_TIMEOUT_MS after the jobs service first saw it delivered), so a day
    // bounds what dead dispatches keep. A dispatch still queued a day (no worker free all that time) ages out too: the
    // jobs service then sends it again (DISPATCH_RESENDS), or fails its job DISPATCHED_TIMEOUT_MS after seeing it gone.
    maxAgeMs: DAY,
  },
  authEvents: { name: "AUTH_EVENTS", subjects: ["auth.events.>"], duplicateWindowMs: 2 * 60 * 1000, maxAgeMs: DAY },
  webhookEvents: { name: "WEBHOOKS_EVENTS", subjects: ["webhooks.events.>"], duplicateWindowMs: 10 * 60 * 1000, maxAgeMs: 7 * DAY },
} as const satisfies Record<string, StreamSpec>;

/**
 * `max_deliver` of the workers' dispatch durable: after this many deliveries JetStream hands a dispatch out no more,
 * so a poison message is not redelivered forever (SECURITY-AUDIT finding 16). The worker fails a job whose processing
 * keeps throwing before that (its MAX_ATTEMPTS); a dispatch that still runs out (naked while the jobs service was
 * unreachable, its worker killed on the last delivery) leaves its job to the jobs service's watchdog, which fails it
 * DISPATCHED_TIMEOUT_MS after first seeing its message delivered. Hand-backs at shutdown count too, hence the margin
 * above the worker's 5 attempts.
 */
export const DISPATCH_MAX_DELIVER = 10;

/**
 * The durable consumer of the dispatch stream that every worker replica shares (filter `jobs.dispatch.>`): each
 * dispatch goes to exactly one worker. The jobs service reads its consumer info: a work message above its
 * `delivered.stream_seq` is still queued for a free worker, which the dispatched timeout never fails.
 */
export const DISPATCH_DURABLE = "workers";

/** Delay before dispatch delivery `deliveryCount` + 1 after a failure: 5 s doubling to 60 s (about 6 min over all). */
export function dispatchRetryDelayMs(deliveryCount: number, baseMs = 5000): number {
  return Math.min(baseMs * 2 ** Math.max(0, deliveryCount - 1), 12 * baseMs);
}

export const nanos = (ms: number): number => ms * 1_000_000;

export function streamConfig(
  spec: StreamSpec,
  name: string,
  subjects: string[],
  replicas: number,
): Partial<StreamConfig> & { name: string } {
  return {
    name,
    subjects,
    retention: spec.retention ?? RetentionPolicy.Limits,
    storage: StorageType.File,
    num_replicas: replicas,
    duplicate_window: nanos(spec.duplicateWindowMs ?? 2 * 60 * 1000),
    max_age: spec.maxAgeMs ? nanos(spec.maxAgeMs) : 0,
  };
}
