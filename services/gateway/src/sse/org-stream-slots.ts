import type { Redis } from "ioredis";

// One round trip per claim: drop leases that were not renewed (a replica that died), then count and add.
const CLAIM = `
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[3], ARGV[4])
redis.call('PEXPIRE', KEYS[1], ARGV[5])
return 1
`;

type SlotRedis = Redis & { rbSseClaimSlot(key: string, now: string, max: string, expiresAt: string, streamId: string, leaseMs: string): Promise<number> };

/**
 * The open SSE streams of each org, counted in Redis so the cap holds across gateway replicas. Each stream holds a
 * lease (a member of the org's sorted set, scored by its expiry) that it renews while open and removes when it
 * ends; a replica that dies without removing its leases frees them when they expire.
 */
export class OrgStreamSlots {
  private readonly redis: SlotRedis;

  constructor(
    redis: Redis,
    private readonly options: { maxPerOrg: number; leaseMs: number; prefix?: string; now?: () => number },
  ) {
    if (!("rbSseClaimSlot" in redis)) redis.defineCommand("rbSseClaimSlot", { numberOfKeys: 1, lua: CLAIM });
    this.redis = redis as SlotRedis;
  }

  /** Takes one of the org's slots for `streamId`; false when the org already has `maxPerOrg` open streams. */
  async claim(orgId: string, streamId: string): Promise<boolean> {
    const now = this.now();
    const claimed = await this.redis.rbSseClaimSlot(this.key(orgId), String(now), String(this.options.maxPerOrg), String(now + this.options.leaseMs), streamId, String(this.options.leaseMs));
    return claimed === 1;
  }

  /** Extends a stream's lease (called on every credential recheck, well within the lease). */
  async renew(orgId: string, streamId: string): Promise<void> {
    const key = this.key(orgId);
    await this.redis.multi().zadd(key, this.now() + this.options.leaseMs, streamId).pexpire(key, this.options.leaseMs).exec();
  }

  async release(orgId: string, streamId: string): Promise<void> {
    await this.redis.zrem(this.key(orgId), streamId);
  }

  private key(orgId: string): string {
    return `${this.options.prefix ?? "rb:sse"}:${orgId}`;
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }
}
