import type { DeliveryStatus } from "../database.js";

/** What happened on one attempt. */
export interface AttemptOutcome {
  succeeded: boolean;
  /** When the attempt ended: retry delays count from the failure. */
  finishedAt: number;
  /** A 429 or 503 with a valid `Retry-After`: the receiver's wish for the next delay (see retryAfterMsOf). */
  retryAfterMs?: number | null;
  /** The receiver answered 410 Gone: nothing more is attempted (its endpoint is disabled). */
  gone?: boolean;
}

/** The delivery's state after an attempt. */
export interface NextState {
  status: DeliveryStatus;
  /** Due time of the next attempt, or null when nothing more is owed. */
  nextAttemptAt: number | null;
}

/** The longest `Retry-After` honoured: a receiver asking for more gets its next attempt after an hour. */
export const RETRY_AFTER_MAX_MS = 60 * 60 * 1000;

/**
 * Decides what follows attempt number `chainAttempt` (1-based, within the current chain) of a delivery.
 * With the schedule [5000, 25000, 125000]: after failed attempts 1, 2, 3 the next one is due 5 s, 25 s and 125 s
 * later; after the fourth fails the delivery is failed (docs/webhooks.md: three retry delays). A `Retry-After` replaces
 * the scheduled delay (capped at {@link RETRY_AFTER_MAX_MS}); the attempt still counts. A 410 ends the chain.
 */
export function decideAfterAttempt(chainAttempt: number, outcome: AttemptOutcome, scheduleMs: readonly number[]): NextState {
  if (outcome.succeeded) return { status: "succeeded", nextAttemptAt: null };
  if (outcome.gone) return { status: "failed", nextAttemptAt: null };
  const delay = scheduleMs[chainAttempt - 1];
  if (delay === undefined) return { status: "failed", nextAttemptAt: null };
  const wanted = outcome.retryAfterMs ?? null;
  return { status: "pending", nextAttemptAt: outcome.finishedAt + (wanted === null ? delay : Math.min(wanted, RETRY_AFTER_MAX_MS)) };
}

/**
 * The delay a 429 or 503 asks for with `Retry-After` (seconds, or an HTTP date), in ms; null for other statuses, a
 * missing or unreadable header, or a date in the past.
 */
export function retryAfterMsOf(status: number | null, header: string | undefined, now = Date.now()): number | null {
  if ((status !== 429 && status !== 503) || !header) return null;
  const value = header.trim();
  if (/^\d{1,10}$/.test(value)) return Number(value) * 1000;
  const at = Date.parse(value);
  if (Number.isNaN(at) || !/[a-z]/i.test(value)) return null;
  return at > now ? at - now : null;
}
