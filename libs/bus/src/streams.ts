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
 * - `jobs.dispatch.<type>`: work for provider workers (work-queue retention: a message is gone once acked).
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
  },
  authEvents: { name: "AUTH_EVENTS", subjects: ["auth.events.>"], duplicateWindowMs: 2 * 60 * 1000, maxAgeMs: DAY },
  webhookEvents: { name: "WEBHOOKS_EVENTS", subjects: ["webhooks.events.>"], duplicateWindowMs: 10 * 60 * 1000, maxAgeMs: 7 * DAY },
} as const satisfies Record<string, StreamSpec>;

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
