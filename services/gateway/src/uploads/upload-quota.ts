import type { Redis } from "ioredis";
import { AppError } from "@renderbus/errors";
import type { Plan } from "@renderbus/plans";

// Both keys live a minute past the latest expiry they hold, so an org that stops uploading leaves nothing behind.
const EXTEND_KEYS = `
local last = tonumber(redis.call('ZRANGE', KEYS[1], -1, -1, 'WITHSCORES')[2])
redis.call('PEXPIREAT', KEYS[1], last + 60000)
redis.call('PEXPIREAT', KEYS[2], last + 60000)
`;

// One round trip per reservation: forget uploads past their expiry (the sweep deletes them), then count, add up and
// add. KEYS: the org's uploads by expiry (sorted set), their reserved bytes (hash). ARGV: now, max uploads, max bytes,
// bytes, upload id, expiry. Answers {1, bytes held before} when reserved (or already was), {0, uploads held} over
// the count, {-1, bytes held} over the bytes.
const RESERVE = `
local expired = redis.call('ZRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
for _, id in ipairs(expired) do redis.call('HDEL', KEYS[2], id) end
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', ARGV[1])
if redis.call('ZSCORE', KEYS[1], ARGV[5]) then return {1, 0} end
local count = redis.call('ZCARD', KEYS[1])
if count >= tonumber(ARGV[2]) then return {0, count} end
local held = 0
for _, value in ipairs(redis.call('HVALS', KEYS[2])) do held = held + tonumber(value) end
if held + tonumber(ARGV[4]) > tonumber(ARGV[3]) then return {-1, held} end
redis.call('ZADD', KEYS[1], ARGV[6], ARGV[5])
redis.call('HSET', KEYS[2], ARGV[5], ARGV[4])
${EXTEND_KEYS}
return {1, held}
`;

// A later expiry for an upload already held (a job named it), never an earlier one; the keys live as long as it.
const KEEP = `
local score = redis.call('ZSCORE', KEYS[1], ARGV[1])
if not score or tonumber(score) >= tonumber(ARGV[2]) then return 0 end
redis.call('ZADD', KEYS[1], ARGV[2], ARGV[1])
${EXTEND_KEYS}
return 1
`;

// A finished upload's real size, only while it is still held (one that expired or was deleted stays forgotten).
const SETTLE = `
if redis.call('ZSCORE', KEYS[1], ARGV[1]) then redis.call('HSET', KEYS[2], ARGV[1], ARGV[2]) end
return 0
`;

type QuotaRedis = Redis & {
  rbUploadReserve(zset: string, sizes: string, now: string, maxUploads: string, maxBytes: string, bytes: string, id: string, expiresAt: string): Promise<[number, number]>;
  rbUploadKeep(zset: string, sizes: string, id: string, expiresAt: string): Promise<number>;
  rbUploadSettle(zset: string, sizes: string, id: string, bytes: string): Promise<number>;
};

/** What one org may hold: from its plan and the gateway's configuration. */
export interface UploadAllowance {
  /** UPLOAD_QUOTA_FACTOR times the plan's max input size. */
  maxBytes: number;
  /** UPLOAD_QUOTA_MAX_UPLOADS. */
  maxUploads: number;
  /** The plan's name, for the refusal's message. */
  plan: string;
}

/** An org's allowance on `plan`. */
export function uploadAllowance(plan: Plan, config: { UPLOAD_QUOTA_FACTOR: number; UPLOAD_QUOTA_MAX_UPLOADS: number }): UploadAllowance {
  return { maxBytes: plan.maxInputBytes * config.UPLOAD_QUOTA_FACTOR, maxUploads: config.UPLOAD_QUOTA_MAX_UPLOADS, plan: plan.name };
}

const UNITS: [number, string][] = [
  [1024 ** 3, "GB"],
  [1024 ** 2, "MB"],
  [1024, "KB"],
];
/** A size as people read it: 1.5 GB, 300 MB, 2.9 KB, 12 bytes. */
function sizeOf(bytes: number): string {
  for (const [unit, name] of UNITS) if (bytes >= unit) return `${+(Math.floor((bytes / unit) * 10) / 10).toFixed(1)} ${name}`;
  return `${bytes} bytes`;
}

/**
 * How much each org keeps in the upload store at once, counted in Redis so the limit holds across gateway replicas
 * (docs/uploads.md, "Storage quota"). Every upload reserves its declared size (a deferred-length upload, the plan's
 * max input size, until it finishes) from its creation until it expires; a job naming it moves its expiry on, a
 * client's DELETE gives it back. Without it one sign-up could fill the disk or bucket every org's uploads and outputs
 * share: 10 requests a minute of 100 MB each on the free plan is 1 GB a minute.
 */
export class UploadQuota {
  private readonly redis: QuotaRedis;

  constructor(
    redis: Redis,
    private readonly options: { prefix?: string; now?: () => number } = {},
  ) {
    if (!("rbUploadReserve" in redis)) {
      redis.defineCommand("rbUploadReserve", { numberOfKeys: 2, lua: RESERVE });
      redis.defineCommand("rbUploadKeep", { numberOfKeys: 2, lua: KEEP });
      redis.defineCommand("rbUploadSettle", { numberOfKeys: 2, lua: SETTLE });
    }
    this.redis = redis as QuotaRedis;
  }

  /**
   * Reserves `bytes` for a new upload of `orgId` until `expiresAt`.
   * @throws AppError PLAN_LIMIT when the org would hold more than its allowance (nothing is reserved then).
   */
  async reserve(orgId: string, uploadId: string, bytes: number, expiresAt: number, allowance: UploadAllowance): Promise<void> {
    const [reserved, held] = await this.redis.rbUploadReserve(
      ...this.keys(orgId),
      String(this.now()),
      String(allowance.maxUploads),
      String(allowance.maxBytes),
      String(bytes),
      uploadId,
      String(expiresAt),
    );
    if (reserved === 1) return;
    const advice = "delete uploads no job needs (DELETE /uploads/{id}) or wait for them to expire";
    if (reserved === 0) throw new AppError("PLAN_LIMIT", `Uploads: an org keeps at most ${allowance.maxUploads} uploads at a time (${held} kept); ${advice}`);
    throw new AppError(
      "PLAN_LIMIT",
      `Uploads: the ${allowance.plan} plan keeps at most ${sizeOf(allowance.maxBytes)} of uploads at a time (${sizeOf(held)} kept, ${sizeOf(bytes)} asked for); ${advice}`,
    );
  }

  /** Counts an upload's final size once it is known (a deferred-length upload reserved the plan's max until then). */
  async settle(orgId: string, uploadId: string, bytes: number): Promise<void> {
    await this.redis.rbUploadSettle(...this.keys(orgId), uploadId, String(bytes));
  }

  /** Holds an upload until `expiresAt` at least (a job named it: UPLOAD_KEEP_AFTER_USE_HOURS). */
  async keepUntil(orgId: string, uploadId: string, expiresAt: number): Promise<void> {
    await this.redis.rbUploadKeep(...this.keys(orgId), uploadId, String(expiresAt));
  }

  /**
   * The ids of the org's uploads still held (not expired, not deleted), newest first (an upload id sorts by its
   * creation time), from after `cursor` (an id of the page before): one page of `limit`, and the next page's cursor.
   */
  async heldIds(orgId: string, { limit, cursor }: { limit: number; cursor?: string | undefined }): Promise<{ ids: string[]; nextCursor: string | null }> {
    const [zset] = this.keys(orgId);
    const held = (await this.redis.zrangebyscore(zset, `(${this.now()}`, "+inf")).sort().reverse();
    const after = cursor === undefined ? held : held.filter((id) => id < cursor);
    const ids = after.slice(0, limit);
    return { ids, nextCursor: after.length > limit ? ids[ids.length - 1]! : null };
  }

  /** Gives an upload's bytes back (the client deleted it). */
  async release(orgId: string, uploadId: string): Promise<void> {
    const [zset, sizes] = this.keys(orgId);
    await this.redis.multi().zrem(zset, uploadId).hdel(sizes, uploadId).exec();
  }

  private keys(orgId: string): [string, string] {
    const base = `${this.options.prefix ?? "rb:uploads"}:${orgId}`;
    return [base, `${base}:bytes`];
  }

  private now(): number {
    return (this.options.now ?? Date.now)();
  }
}
