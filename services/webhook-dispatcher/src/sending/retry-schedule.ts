import type { DeliveryStatus } from "../database.js";

/** What happened on one attempt. */
export interface AttemptOutcome {
  succeeded: boolean;
  /** When the attempt ended: retry delays count from the failure. */
  finishedAt: number;
}

/** The delivery's state after an attempt. */
export interface NextState {
  status: DeliveryStatus;
  /** Due time of the next attempt, or null when nothing more is owed. */
  nextAttemptAt: number | null;
}

/**
 * Decides what follows attempt number `chainAttempt` (1-based, within the current chain) of a delivery.
 * With the schedule [5000, 25000, 125000]: after failed attempts 1, 2, 3 the next one is due 5 s, 25 s and 125 s
 * later; after the fourth fails the delivery is failed (seed section 8: three retry delays).
 */
export function decideAfterAttempt(chainAttempt: number, outcome: AttemptOutcome, scheduleMs: readonly number[]): NextState {
  if (outcome.succeeded) return { status: "succeeded", nextAttemptAt: null };
  const delay = scheduleMs[chainAttempt - 1];
  if (delay === undefined) return { status: "failed", nextAttemptAt: null };
  return { status: "pending", nextAttemptAt: outcome.finishedAt + delay };
}
