import { describe, expect, it } from "vitest";
import { decideAfterAttempt, RETRY_AFTER_MAX_MS, retryAfterMsOf } from "./retry-schedule.js";
import { endpointMatches } from "../endpoints/endpoint-rules.js";

const seed = [5000, 25000, 125000];

describe("Retry-After and 410", () => {
  it("reads Retry-After in seconds or as an HTTP date, only on 429 and 503", () => {
    expect(retryAfterMsOf(503, "7")).toBe(7000);
    expect(retryAfterMsOf(429, " 120 ")).toBe(120_000);
    expect(retryAfterMsOf(500, "7")).toBeNull();
    expect(retryAfterMsOf(503, undefined)).toBeNull();
    expect(retryAfterMsOf(503, "soon")).toBeNull();
    expect(retryAfterMsOf(503, "-5")).toBeNull();
    const now = Date.parse("2026-11-24T20:00:00Z");
    expect(retryAfterMsOf(503, "Tue, 24 Nov 2026 20:00:30 GMT", now)).toBe(30_000);
    expect(retryAfterMsOf(503, "Tue, 24 Nov 2026 19:00:00 GMT", now)).toBeNull();
  });

  it("replaces the scheduled delay by Retry-After, at most an hour, and still ends the chain after the last attempt", () => {
    expect(decideAfterAttempt(1, { succeeded: false, finishedAt: 1000, retryAfterMs: 7000 }, seed)).toEqual({ status: "pending", nextAttemptAt: 8000 });
    expect(decideAfterAttempt(1, { succeeded: false, finishedAt: 0, retryAfterMs: 10 * RETRY_AFTER_MAX_MS }, seed)).toEqual({ status: "pending", nextAttemptAt: RETRY_AFTER_MAX_MS });
    expect(decideAfterAttempt(4, { succeeded: false, finishedAt: 0, retryAfterMs: 7000 }, seed)).toEqual({ status: "failed", nextAttemptAt: null });
  });

  it("fails a delivery at once on 410 Gone", () => {
    expect(decideAfterAttempt(1, { succeeded: false, finishedAt: 0, gone: true }, seed)).toEqual({ status: "failed", nextAttemptAt: null });
  });
});

describe("endpoint event filters", () => {
  it('matches named events, and "*" every job and batch event but not operational ones', () => {
    expect(endpointMatches(["job.failed"], "job.failed")).toBe(true);
    expect(endpointMatches(["job.failed"], "job.completed")).toBe(false);
    expect(endpointMatches(["*"], "batch.completed")).toBe(true);
    expect(endpointMatches(["*"], "endpoint.disabled")).toBe(false);
    expect(endpointMatches(["*", "endpoint.disabled"], "endpoint.disabled")).toBe(true);
  });
});
