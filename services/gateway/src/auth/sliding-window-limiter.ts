import { randomUUID } from "node:crypto";
import type { Redis } from "ioredis";

/** The outcome of one attempt against a sliding-window budget. */
export interface SlidingWindowDecision {
  allowed: boolean;
  /** When refused: whole seconds until the oldest counted attempt leaves the window (at least 1). */
  retryAfterSeconds: number;
  /** When allowed: the attempt's entry, so it can be {@link SlidingWindowLimiter.refund}ed. */
  attempt?: string;
}

// One round trip, atomic: drop attempts older than the window, then count this one if the budget has room. Time is
// Redis's own clock, so replicas with skewed clocks still share one timeline. Refused attempts are not recorded:
// hammering does not extend a lockout past the window of the attempts that were let through.
const ATTEMPT = `
local time = redis.call('TIME')
local now = tonumber(time[1]) * 1000 + math.floor(tonumber(time[2]) / 1000)
local window = tonumber(ARGV[1])
local limit = tonumber(ARGV[2])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now - window)
local count = redis.call('ZCARD', KEYS[1])
if count < limit then
  redis.call('ZADD', KEYS[1], now, ARGV[3])
  redis.call('PEXPIRE', KEYS[1], window)
  return { 1, 0 }
end
local oldest = redis.call('ZRANGE', KEYS[1], 0, 0, 'WITHSCORES')
return { 0, tonumber(oldest[2]) + window - now }
`;

type LimiterRedis = Redis & { rbSlidingWindowAttempt(key: string, windowMs: string, limit: string, attempt: string): Promise<[number, number]> };

/**
 * At most `limit` attempts in any rolling window, counted in Redis and so shared by every gateway replica. Used for
 * abuse limits on `/auth/*`, where a fixed window would not do: with fixed windows an attacker who straddles a
 * boundary gets twice the limit in a row, so "5 per window" would let 10 password guesses through back to back. The
 * per-org API budget keeps its fixed windows (rate-limiter.ts); this costs one sorted-set entry per attempt.
 */
export class SlidingWindowLimiter {
  private readonly redis: LimiterRedis;

  constructor(
    redis: Redis,
    private readonly prefix: string,
  ) {
    if (!("rbSlidingWindowAttempt" in redis)) redis.defineCommand("rbSlidingWindowAttempt", { numberOfKeys: 1, lua: ATTEMPT });
    this.redis = redis as LimiterRedis;
  }

  /** Counts one attempt against `subject`'s budget of `limit` per `windowMs`, unless that budget is spent. */
  async attempt(subject: string, limit: number, windowMs: number): Promise<SlidingWindowDecision> {
    const attempt = randomUUID();
    const [allowed, retryAfterMs] = await this.redis.rbSlidingWindowAttempt(this.keyOf(subject), String(windowMs), String(limit), attempt);
    if (allowed === 1) return { allowed: true, retryAfterSeconds: 0, attempt };
    return { allowed: false, retryAfterSeconds: Math.max(1, Math.ceil(retryAfterMs / 1000)) };
  }

  /** Gives an allowed attempt back (e.g. a sign-in that succeeded must not count towards locking the account). */
  async refund(subject: string, attempt: string): Promise<void> {
    await this.redis.zrem(this.keyOf(subject), attempt);
  }

  private keyOf(subject: string): string {
    return `${this.prefix}:${subject}`;
  }
}
