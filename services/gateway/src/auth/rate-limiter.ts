import type { Redis } from "ioredis";
import { LRUCache } from "lru-cache";

export interface RateLimitDecision {
  allowed: boolean;
  limit: number;
  remaining: number;
  /** Seconds until the window resets. */
  resetSeconds: number;
}

// One round trip: take `ARGV[2]` units from the window's counter and set its expiry on first use.
const TAKE = `
local count = redis.call('INCRBY', KEYS[1], ARGV[2])
if count == tonumber(ARGV[2]) then redis.call('PEXPIRE', KEYS[1], ARGV[1]) end
return { count, redis.call('PTTL', KEYS[1]) }
`;

/** Share of a limit one replica takes from Redis at once (see {@link blockSizeOf}). */
const BLOCK_SHARE = 0.01;
/** Largest block: a replica serving one subject at ~10,000 req/s still takes a block only every ~0.1 s. */
const MAX_BLOCK = 1_000;
/** Budgets a replica holds at once (subjects x windows); the least recently used go first, their unspent units lost. */
const MAX_HELD_BUDGETS = 20_000;

/**
 * Units of a budget taken from Redis at once: 1% of the limit, at least 1 and at most {@link MAX_BLOCK}. Every
 * default plan (10-120 requests a minute) and the per-client budget below 200 a minute take one unit per request, so
 * their counting is exact; a limit of 6,000 a minute is counted in blocks of 60.
 */
export const blockSizeOf = (limit: number): number => Math.max(1, Math.min(MAX_BLOCK, Math.floor(limit * BLOCK_SHARE)));

/** One subject's budget in one window, as this replica holds it. */
interface HeldBudget {
  /** Units taken from Redis and not spent yet. */
  units: number;
  /** The window's counter after this replica's last take (every replica's takes until then). */
  count: number;
  /** When the window's counter expires, on this clock (ms). */
  resetAt: number;
  /** The limit under which Redis had no units left: nothing is asked again this window unless the limit grows. */
  spentAtLimit?: number;
  /** Requests waiting for the take in flight, in arrival order. */
  waiting: Array<{ resolve(decision: RateLimitDecision): void; reject(error: unknown): void }>;
  taking: boolean;
}

/**
 * Fixed one-minute windows counted in Redis, shared by every gateway replica, so an org's limit holds in total
 * rather than per replica (see docs/adr/0002-rate-limit-store.md). A replica takes units from the window's counter
 * in blocks ({@link blockSizeOf}) and spends them from memory, so a subject with a large limit costs Redis one
 * round trip per block instead of one per request (docs/adr/0013-rate-limit-blocks.md):
 * - never more than the limit is admitted in a window: a unit is taken from the shared counter before it is spent;
 * - a replica's unspent units are lost when the window ends, so up to one block per replica (1% of the limit each)
 *   may go unused;
 * - `remaining` counts every replica's takes up to this replica's last one, and its own unspent units;
 * - requests that find no unit while a take is in flight wait for it, and the next take covers all of them at once:
 *   concurrent requests of a small-limit subject cost two round trips, not one each in a row;
 * - once Redis has no units left for a subject, its requests are refused from memory until the window ends (or its
 *   limit grows, a plan upgrade), without a round trip each.
 */
export class RateLimiter {
  private readonly redis: Redis & { rbRateLimitTake(key: string, windowMs: string, units: string): Promise<[number, number]> };
  private readonly held = new LRUCache<string, HeldBudget>({ max: MAX_HELD_BUDGETS });

  constructor(
    redis: Redis,
    private readonly windowMs = 60_000,
    private readonly prefix = "rb:rl",
    private readonly now: () => number = Date.now,
  ) {
    // A defined command runs by EVALSHA (the script is sent once, then only its hash).
    if (!("rbRateLimitTake" in redis)) redis.defineCommand("rbRateLimitTake", { numberOfKeys: 1, lua: TAKE });
    this.redis = redis as RateLimiter["redis"];
  }

  hit(subject: string, limit: number): Promise<RateLimitDecision> {
    const now = this.now();
    const key = `${this.prefix}:${subject}:${Math.floor(now / this.windowMs)}`;
    let budget = this.held.get(key);
    if (!budget) {
      budget = { units: 0, count: 0, resetAt: now + this.windowMs - (now % this.windowMs), waiting: [], taking: false };
      this.held.set(key, budget);
    }
    if (budget.waiting.length === 0 && budget.units > 0) {
      budget.units -= 1;
      return Promise.resolve(this.decision(budget, limit, true, now));
    }
    if (budget.waiting.length === 0 && budget.spentAtLimit !== undefined && limit <= budget.spentAtLimit) {
      return Promise.resolve(this.decision(budget, limit, false, now));
    }
    return new Promise((resolve, reject) => {
      budget.waiting.push({ resolve, reject });
      if (!budget.taking) void this.take(key, budget, limit);
    });
  }

  /** Takes units for the waiting requests until none waits, then serves them in arrival order. */
  private async take(key: string, budget: HeldBudget, limit: number): Promise<void> {
    budget.taking = true;
    try {
      while (budget.waiting.length > 0) {
        const waiting = budget.waiting.splice(0);
        const spent = budget.spentAtLimit !== undefined && limit <= budget.spentAtLimit;
        const wanted = Math.max(blockSizeOf(limit), waiting.length - budget.units);
        if (!spent && budget.units < waiting.length) {
          let answer: [number, number];
          try {
            answer = await this.redis.rbRateLimitTake(key, String(this.windowMs), String(wanted));
          } catch (error) {
            for (const waiter of waiting) waiter.reject(error);
            continue;
          }
          const [count, ttl] = answer;
          // The units of this take that were still under the limit (none once the counter had passed it).
          const granted = Math.max(0, Math.min(wanted, limit - (count - wanted)));
          budget.units += granted;
          budget.count = count;
          if (ttl > 0) budget.resetAt = this.now() + ttl;
          if (granted < wanted) budget.spentAtLimit = limit;
        }
        const now = this.now();
        for (const waiter of waiting) {
          const allowed = budget.units > 0;
          if (allowed) budget.units -= 1;
          waiter.resolve(this.decision(budget, limit, allowed, now));
        }
      }
    } finally {
      budget.taking = false;
    }
  }

  private decision(budget: HeldBudget, limit: number, allowed: boolean, now: number): RateLimitDecision {
    return {
      allowed,
      limit,
      remaining: Math.max(0, Math.min(limit, limit - budget.count + budget.units)),
      resetSeconds: Math.max(1, Math.ceil((budget.resetAt - now) / 1000)),
    };
  }
}
