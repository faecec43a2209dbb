import { randomUUID } from "node:crypto";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testInfra } from "@renderbus/testing";
import { RateLimiter, blockSizeOf } from "./rate-limiter.js";

/** Scripts this connection has run (ioredis' `sendCommand` is what every command goes through). */
function countCommands(redis: Redis): { readonly count: number } {
  const counter = { count: 0 };
  const send = redis.sendCommand.bind(redis);
  redis.sendCommand = ((...args: Parameters<Redis["sendCommand"]>) => {
    if (args[0].name === "evalsha" || args[0].name === "eval") counter.count += 1;
    return send(...args);
  }) as Redis["sendCommand"];
  return counter;
}

describe("rate limiter (Redis, fixed windows taken in blocks)", () => {
  const connections: Redis[] = [];
  const prefix = `rb:test:${randomUUID()}`;
  // Two replicas' connections to one Redis, and a clock each test moves.
  let now = 1_700_000_000_000;
  const replica = () => {
    const redis = new Redis(testInfra().redisUrl);
    connections.push(redis);
    return { redis, limiter: new RateLimiter(redis, 60_000, prefix, () => now) };
  };
  let first: ReturnType<typeof replica>;
  let second: ReturnType<typeof replica>;
  beforeAll(() => {
    first = replica();
    second = replica();
  });
  afterAll(() => {
    for (const redis of connections) redis.disconnect();
  });

  it("counts the default plans' small limits one request at a time: exact, with the headers' remaining count", async () => {
    expect(blockSizeOf(10)).toBe(1);
    expect(blockSizeOf(120)).toBe(1);
    expect(blockSizeOf(6_000)).toBe(60);
    expect(blockSizeOf(100_000_000)).toBe(1_000);
    const decisions = [];
    for (let request = 0; request < 4; request++) decisions.push(await (request % 2 === 0 ? first : second).limiter.hit("org:small", 3));
    expect(decisions.map(({ allowed, remaining }) => ({ allowed, remaining }))).toEqual([
      { allowed: true, remaining: 2 },
      { allowed: true, remaining: 1 },
      { allowed: true, remaining: 0 },
      { allowed: false, remaining: 0 },
    ]);
    expect(decisions[3]!.resetSeconds).toBeGreaterThan(0);
    expect(decisions[3]!.resetSeconds).toBeLessThanOrEqual(60);
  });

  it("never admits more than the limit across replicas, however the requests interleave, and wastes at most a block per replica", async () => {
    const limit = 1_000; // blocks of 10
    const requests = Array.from({ length: 1_500 }, (_, index) => (index % 3 === 0 ? second : first).limiter.hit("org:large", limit));
    const allowed = (await Promise.all(requests)).filter((decision) => decision.allowed).length;
    expect(allowed).toBeLessThanOrEqual(limit);
    expect(allowed).toBeGreaterThanOrEqual(limit - 2 * blockSizeOf(limit));
  });

  it("spends a block from memory: one Redis round trip per block of a large limit, not one per request", async () => {
    const { redis, limiter } = replica();
    const sent = countCommands(redis);
    for (let request = 0; request < 100; request++) expect((await limiter.hit("org:blocks", 5_000)).allowed).toBe(true);
    // Blocks of 50: two takes (the first may also load the script: an EVALSHA refused, then an EVAL).
    expect(sent.count).toBeLessThanOrEqual(3);
  });

  it("serves concurrent requests of a small limit with one take for all of those that waited, in arrival order", async () => {
    const { redis, limiter } = replica();
    const sent = countCommands(redis);
    const decisions = await Promise.all(Array.from({ length: 20 }, () => limiter.hit("org:burst", 12)));
    expect(decisions.map((decision) => decision.allowed)).toEqual([...Array(12).fill(true), ...Array(8).fill(false)]);
    expect(sent.count).toBeLessThanOrEqual(3);
  });

  it("refuses a spent subject from memory until the window ends, and asks again when its limit grows", async () => {
    const { redis, limiter } = replica();
    for (let request = 0; request < 2; request++) expect((await limiter.hit("org:spent", 2)).allowed).toBe(true);
    expect((await limiter.hit("org:spent", 2)).allowed).toBe(false);
    const sent = countCommands(redis);
    for (let request = 0; request < 50; request++) expect((await limiter.hit("org:spent", 2)).allowed).toBe(false);
    expect(sent.count).toBe(0);
    // A plan upgrade: the same window, a larger limit.
    expect((await limiter.hit("org:spent", 10)).allowed).toBe(true);
    expect(sent.count).toBe(1);
    now += 60_000;
    expect((await limiter.hit("org:spent", 2)).allowed).toBe(true);
  });

  it("fails a request whose take Redis refused, and takes again for the next one", async () => {
    const redis = new Redis(testInfra().redisUrl, { maxRetriesPerRequest: 0, enableOfflineQueue: false });
    connections.push(redis);
    const limiter = new RateLimiter(redis, 60_000, prefix, () => now);
    await new Promise((resolve) => redis.once("ready", resolve));
    const ended = new Promise((resolve) => redis.once("end", resolve));
    redis.disconnect();
    await ended;
    await expect(limiter.hit("org:offline", 10)).rejects.toThrow();
    await redis.connect();
    expect((await limiter.hit("org:offline", 10)).allowed).toBe(true);
  });
});
