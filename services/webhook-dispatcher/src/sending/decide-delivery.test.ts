import { describe, expect, it } from "vitest";
import type { DeliveryRow } from "../deliveries/delivery.js";
import { attemptedChange, decideDelivery, type DeliveryTransition, type RecordedAttempt } from "./decide-delivery.js";

const claimed: DeliveryRow = {
  id: "del_1",
  org_id: "org_1",
  event: "job.completed",
  source_event_id: "evt_1",
  job_id: "job_1",
  batch_id: null,
  sequence: null,
  url: "https://old.example.com/hook",
  body: "{}",
  status: "pending",
  attempts: 2,
  chain_attempts: 0,
  next_attempt_at: 11_000,
  lease_until: 11_000,
  lease_token: "replica-a",
  last_attempt_at: 500,
  last_response_status: 500,
  last_error: null,
  event_at: 100,
  first_attempt_at: 200,
  created_at: 100,
  trace_headers: null,
  announced: true,
  endpoint_id: "ep_default",
};

const failedAttempt: RecordedAttempt = {
  attempt: 3,
  startedAt: 1000,
  responseStatus: 503,
  error: null,
  latencyMs: 40,
  responseExcerpt: "busy",
  requestHeaders: null,
  responseHeaders: null,
  status: "pending",
  nextAttemptAt: 6040,
  url: "https://new.example.com/hook",
};

/** Applies transitions in order, as the stored row would go through them; stops at one that does not apply. */
function run(row: DeliveryRow, ...transitions: DeliveryTransition[]): DeliveryRow | undefined {
  let state: DeliveryRow | undefined = row;
  for (const transition of transitions) {
    const change: ReturnType<typeof decideDelivery> = state && decideDelivery(state, transition);
    state = state && change && { ...state, ...change };
  }
  return state;
}

describe("delivery transitions", () => {
  it("leases a due delivery to a replica until the lease's end, when it is due again", () => {
    expect(run({ ...claimed, lease_until: null, lease_token: null, next_attempt_at: 900 }, { type: "Leased", leaseToken: "replica-b", until: 9000 })).toMatchObject({
      lease_token: "replica-b",
      lease_until: 9000,
      next_attempt_at: 9000,
    });
  });

  it("records a failed attempt: the lease ends, the chain counts one more, and the retry is due", () => {
    expect(run(claimed, { type: "Attempted", attempt: failedAttempt })).toEqual({
      ...claimed,
      attempts: 3,
      chain_attempts: 1,
      status: "pending",
      next_attempt_at: 6040,
      lease_until: null,
      lease_token: null,
      url: "https://new.example.com/hook",
      last_attempt_at: 1000,
      last_response_status: 503,
      last_error: null,
      first_attempt_at: 200,
    });
  });

  it("keeps the first attempt's time, setting it only on the delivery's first attempt", () => {
    const fresh = { ...claimed, attempts: 0, first_attempt_at: null, announced: false };
    expect(run(fresh, { type: "Attempted", attempt: { ...failedAttempt, attempt: 1 } })).toMatchObject({ first_attempt_at: 1000, announced: true });
    expect(run(claimed, { type: "Attempted", attempt: failedAttempt })?.first_attempt_at).toBe(200);
  });

  it("postpones a held delivery without counting an attempt, keeping its lease", () => {
    expect(run(claimed, { type: "Postponed", until: 13_000 })).toEqual({ ...claimed, lease_until: 13_000, next_attempt_at: 13_000 });
  });

  it("releases a held delivery untouched, due again at once", () => {
    expect(run(claimed, { type: "Released", now: 1500 })).toEqual({ ...claimed, lease_until: null, lease_token: null, next_attempt_at: 1500 });
  });

  it("restarts a failed delivery as a new chain due at once; attempt numbers continue", () => {
    const failed = run(claimed, { type: "Attempted", attempt: { ...failedAttempt, status: "failed", nextAttemptAt: null } })!;
    expect(run(failed, { type: "Restarted", now: 20_000 })).toMatchObject({ status: "pending", attempts: 3, chain_attempts: 0, next_attempt_at: 20_000, lease_token: null });
  });

  it("restarts a succeeded delivery too, but never one still pending", () => {
    expect(decideDelivery({ ...claimed, status: "succeeded" }, { type: "Restarted", now: 1 })).toBeDefined();
    expect(decideDelivery(claimed, { type: "Restarted", now: 1 })).toBeUndefined();
  });

  it("decides an attempt's change from the claimed row alone", () => {
    expect(decideDelivery(claimed, { type: "Attempted", attempt: failedAttempt })).toEqual(attemptedChange(claimed, failedAttempt));
  });
});
