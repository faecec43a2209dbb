import type { Redis } from "ioredis";

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

// One round trip: increment the window's counter and set its expiry on first use.
const INCREMENT = `
local count = redis.call('INCR', KEYS[1])
if count == 1 then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return { count, redis.call('PTTL', KEYS[1]) }
`;

/**
 * Fixed one-minute windows counted in Redis, shared by every gateway replica, so an org's limit holds in total
 * rather than per replica. Redis was chosen over PostgreSQL and NATS KV: INCR is atomic and one round trip
 * (see docs/adr/0002-rate-limit-store.md).
 */
export class RateLimiter {
  private readonly redis: Redis & { rbRateLimitIncrement(key: string, windowMs: string): Promise<[number, number]> };

  constructor(
    redis: Redis,
    private readonly windowMs = 60_000,
    private readonly prefix = "rb:rl",
  ) {
    // A defined command runs by EVALSHA (the script is sent once, then only its hash): every API request pays this
    // round trip, so it stays as small as it can be.
    if (!("rbRateLimitIncrement" in redis)) redis.defineCommand("rbRateLimitIncrement", { numberOfKeys: 1, lua: INCREMENT });
    this.redis = redis as RateLimiter["redis"];
  }

  async hit(subject: string, limit: number, now = Date.now()): Promise<RateLimitDecision> {
    const window = Math.floor(now / this.windowMs);
    const key = `${this.prefix}:${subject}:${window}`;
    const [count, ttl] = await this.redis.rbRateLimitIncrement(key, String(this.windowMs));
    const resetMs = ttl > 0 ? ttl : this.windowMs - (now % this.windowMs);
    return {
      allowed: count <= limit,
      limit,
      remaining: Math.max(0, limit - count),
      resetSeconds: Math.max(1, Math.ceil(resetMs / 1000)),
    };
  }
}
