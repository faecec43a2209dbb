import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testInfra } from "@renderbus/testing";
import { SlidingWindowLimiter } from "./sliding-window-limiter.js";

describe("sliding-window limiter (Redis)", () => {
  let redis: Redis;
  let otherReplicaRedis: Redis;
  let limiter: SlidingWindowLimiter;
  const prefix = `rb:test:${randomUUID()}`;
  beforeAll(() => {
    redis = new Redis(testInfra().redisUrl);
    otherReplicaRedis = new Redis(testInfra().redisUrl);
    limiter = new SlidingWindowLimiter(redis, prefix);
  });
  afterAll(() => {
    redis?.disconnect();
    otherReplicaRedis?.disconnect();
  });

  it("lets `limit` attempts through, then refuses with the seconds until the oldest one leaves the window", async () => {
    const decisions = [];
    for (let attempt = 0; attempt < 6; attempt++) decisions.push(await limiter.attempt("account", 5, 60_000));
    expect(decisions.map((decision) => decision.allowed)).toEqual([true, true, true, true, true, false]);
    expect(decisions[5]!.retryAfterSeconds).toBeGreaterThan(0);
    expect(decisions[5]!.retryAfterSeconds).toBeLessThanOrEqual(60);
  });

  it("does not record refused attempts, and a refunded attempt frees exactly one place", async () => {
    const allowed = [];
    for (let attempt = 0; attempt < 3; attempt++) allowed.push(await limiter.attempt("refund", 3, 60_000));
    for (let attempt = 0; attempt < 10; attempt++) expect((await limiter.attempt("refund", 3, 60_000)).allowed).toBe(false);
    await limiter.refund("refund", allowed[0]!.attempt!);
    expect((await limiter.attempt("refund", 3, 60_000)).allowed).toBe(true);
    expect((await limiter.attempt("refund", 3, 60_000)).allowed).toBe(false);
  });

  it("shares one count between limiters on one Redis (gateway replicas)", async () => {
    const other = new SlidingWindowLimiter(otherReplicaRedis, prefix);
    expect((await limiter.attempt("shared", 2, 60_000)).allowed).toBe(true);
    expect((await other.attempt("shared", 2, 60_000)).allowed).toBe(true);
    expect((await limiter.attempt("shared", 2, 60_000)).allowed).toBe(false);
  });
});
