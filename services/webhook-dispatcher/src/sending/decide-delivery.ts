import type { DeliveryStatus } from "../database.js";
import type { DeliveryRow } from "../deliveries/delivery.js";

/** One attempt as the sender records it: the outcome, and what decideAfterAttempt made of it. */
export interface RecordedAttempt {
  attempt: number;
  startedAt: number;
  /** A rate-limited endpoint's start slot: the attempt started at it or later, never before. */
  slotAt?: number;
  responseStatus: number | null;
  error: string | null;
  latencyMs: number;
  responseExcerpt: string | null;
  /** The request's headers without signatures, and the receiver's (null: no answer, or not kept). */
  requestHeaders: Record<string, string> | null;
  responseHeaders: Record<string, string> | null;
  status: DeliveryStatus;
  nextAttemptAt: number | null;
  url: string;
}

/** What can happen to a stored delivery after its insert. */
export type DeliveryTransition =
  /** A replica takes the delivery until `until`: it is due again then, which is how a crashed holder's rows come back. */
  | { type: "Leased"; leaseToken: string; until: number }
  /** The holder keeps it out of reach until `until` without counting an attempt (auth service unreachable). */
  | { type: "Postponed"; until: number }
  /** The holder gives it back untouched (shutdown mid-attempt): due again at `now`. */
  | { type: "Released"; now: number }
  /** The holder recorded an attempt: the lease ends and the outcome decides what is owed next. */
  | { type: "Attempted"; attempt: RecordedAttempt }
  /** A manual retry of a finished delivery: a new attempt chain, due at `now`; attempt numbers continue. */
  | { type: "Restarted"; now: number };

/** The columns of a delivery that its transitions write. */
export type DeliveryState = Pick<
  DeliveryRow,
  | "status"
  | "attempts"
  | "chain_attempts"
  | "next_attempt_at"
  | "lease_until"
  | "lease_token"
  | "url"
  | "last_attempt_at"
  | "last_response_status"
  | "last_error"
  | "first_attempt_at"
  | "announced"
>;

/** The statuses a manual retry may restart: a delivery still pending has a chain running. */
export const RESTARTABLE_STATUSES = ["succeeded", "failed"] as const satisfies readonly DeliveryStatus[];

/** A transition whose columns do not depend on the delivery's stored state (the SQL applies it to rows it never read). */
export type RowIndependentTransition = Exclude<DeliveryTransition, { type: "Attempted" }>;

/** The columns a row-independent transition sets (a restart only applies to RESTARTABLE_STATUSES: see decideDelivery). */
export function deliveryChange(transition: RowIndependentTransition): Partial<DeliveryState> {
  switch (transition.type) {
    case "Leased":
      return { lease_until: transition.until, lease_token: transition.leaseToken, next_attempt_at: transition.until };
    case "Postponed":
      return { lease_until: transition.until, next_attempt_at: transition.until };
    case "Released":
      return { lease_until: null, lease_token: null, next_attempt_at: transition.now };
    case "Restarted":
      return { status: "pending", chain_attempts: 0, next_attempt_at: transition.now, lease_until: null, lease_token: null };
  }
}

/**
 * The columns a transition sets on `delivery`, or undefined when it does not apply (a restart of a delivery still
 * pending). Pure: the SQL that stores each transition writes exactly these values, and an attempt's announcement is
 * built from `{ ...delivery, ...change }` before the write.
 */
export function decideDelivery(delivery: Pick<DeliveryState, "status" | "chain_attempts" | "first_attempt_at">, transition: DeliveryTransition): Partial<DeliveryState> | undefined {
  switch (transition.type) {
    case "Attempted":
      return attemptedChange(delivery, transition.attempt);
    case "Restarted":
      return isRestartable(delivery.status) ? deliveryChange(transition) : undefined;
    default:
      return deliveryChange(transition);
  }
}

/** Every column an attempt writes: its outcome, a new chain attempt, and the end of the lease. */
export type AttemptedChange = Required<DeliveryState>;

/** decideDelivery's change for an attempt recorded by the delivery's holder. */
export function attemptedChange(delivery: Pick<DeliveryState, "chain_attempts" | "first_attempt_at">, attempt: RecordedAttempt): AttemptedChange {
  return {
    attempts: attempt.attempt,
    chain_attempts: delivery.chain_attempts + 1,
    status: attempt.status,
    next_attempt_at: attempt.nextAttemptAt,
    lease_until: null,
    lease_token: null,
    url: attempt.url,
    last_attempt_at: attempt.startedAt,
    last_response_status: attempt.responseStatus,
    last_error: attempt.error,
    first_attempt_at: delivery.first_attempt_at ?? attempt.startedAt,
    announced: true,
  };
}

/** Whether a manual retry may restart a delivery in `status`. */
export function isRestartable(status: DeliveryStatus): boolean {
  return (RESTARTABLE_STATUSES as readonly DeliveryStatus[]).includes(status);
}
