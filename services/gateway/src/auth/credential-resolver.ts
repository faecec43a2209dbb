import { createHash } from "node:crypto";
import type { auth } from "@renderbus/contracts";
import { AppError, unauthorized } from "@renderbus/errors";
import type { AuthContext, PromiseClient } from "@renderbus/rpc";
import { LRUCache } from "lru-cache";
import type { CredentialMarkState, CredentialMarks } from "./credential-marks.js";

interface CacheEntry {
  context: AuthContext;
  /** The org's membership epoch in Redis when the entry was resolved (see {@link CredentialMarks}). */
  orgEpoch: string;
  /** When the Redis marks last said the entry still holds (the time the read started). */
  marksCheckedAt: number;
  /** The marks read in flight: concurrent requests of one key share it. */
  marksRead?: Promise<CredentialMarkState>;
}

export interface CredentialResolverOptions {
  auth: PromiseClient<auth.AuthClient>;
  /** How long a resolved key is served from memory; 0 turns the cache off. */
  ttlMs: number;
  /** Revocation and membership marks shared by the replicas; without them only NATS events and the TTL apply. */
  marks?: CredentialMarks;
  /**
   * How long a cached key is served after its marks last held before they are read again
   * ({@link DEFAULT_MARKS_RECHECK_MS}); 0 reads them on every request.
   */
  marksRecheckMs?: number;
  /** Most keys held (least recently used go first). */
  maxEntries?: number;
  /** How long an unknown, revoked or refused key is answered from memory; 0 turns the negative cache off. */
  negativeTtlMs?: number;
  now?: () => number;
}

/** API keys are `rb_` + base64url; anything else is refused before any lookup. */
const API_KEY_PATTERN = /^rb_[A-Za-z0-9_-]{40,100}$/;

/** Default bound of each cache: a replica holds at most this many resolved and this many refused keys. */
export const DEFAULT_MAX_CACHED_KEYS = 10_000;
/**
 * Default time between two reads of a cached key's Redis marks. A key revoked on another replica is refused here
 * within this time even if the NATS message never arrives, inside the promise that an ended credential is refused by every replica within 1 s; a key
 * used at thousands of requests a second costs Redis a few reads a second instead of one per request.
 */
export const DEFAULT_MARKS_RECHECK_MS = 250;
/** Default life of a refusal: short, so a key whose creator is invited back works again soon. */
export const DEFAULT_NEGATIVE_TTL_MS = 5_000;

export const keyHashOf = (key: string): string => createHash("sha256").update(key).digest("hex");

/**
 * Resolves a request's credential (Bearer API key or the dashboard's session cookie) to the auth context.
 * API key lookups are cached by key hash in a bounded LRU for a short TTL, and refusals for a shorter one (a flood of
 * bogus keys costs the auth service one lookup per key per {@link DEFAULT_NEGATIVE_TTL_MS}). A cache hit checks the
 * Redis marks ({@link CredentialMarks}) when they were last read more than `marksRecheckMs` ago (one read for the
 * concurrent requests of a key): a key revoked on any replica is refused within that time even if this replica
 * missed the NATS message, and a changed org (members, roles, plan) resolves again. Revocation events also drop
 * entries at once (see `forgetApiKey`). Sessions are not cached: sign-out must be immediate and dashboard traffic
 * is light.
 */
export class CredentialResolver {
  private readonly byHash: LRUCache<string, CacheEntry>;
  private readonly refused: LRUCache<string, true>;
  private readonly now: () => number;
  private lastSweep: number;

  constructor(private readonly options: CredentialResolverOptions) {
    this.now = options.now ?? Date.now;
    const max = options.maxEntries ?? DEFAULT_MAX_CACHED_KEYS;
    // The TTL clock is ours (tests move it); ttlResolution 0 reads it on every check instead of arming a timer.
    const perf = { now: this.now };
    this.byHash = new LRUCache({ max, ttl: Math.max(1, options.ttlMs), ttlResolution: 0, perf });
    this.refused = new LRUCache({ max, ttl: Math.max(1, options.negativeTtlMs ?? DEFAULT_NEGATIVE_TTL_MS), ttlResolution: 0, perf });
    this.lastSweep = this.now();
  }

  /** Entries held right now (expired ones count until the next sweep). */
  get size(): { resolved: number; refused: number } {
    return { resolved: this.byHash.size, refused: this.refused.size };
  }

  /**
   * Resolves the request's credential. `admitted` is the caller's verdict on whether the request may proceed at all
   * (the per-client budget, authenticate.ts): nothing reaches the auth service before it resolves, and its rejection
   * wins over any answer here; a cached key's Redis marks are read while it is pending, saving a round trip.
   */
  async resolve(headers: { authorization?: string | undefined; cookie?: string | undefined }, admitted: Promise<unknown> = Promise.resolve()): Promise<AuthContext> {
    const authorization = headers.authorization;
    if (authorization !== undefined) {
      const match = /^Bearer ([^\s]+)$/i.exec(authorization.trim());
      if (match?.[1]) return this.resolveApiKey(match[1], admitted);
    } else if (headers.cookie && /(?:^|;\s*)rb_session=/.test(headers.cookie)) {
      await admitted;
      return this.resolveSession(headers.cookie);
    }
    await admitted;
    throw unauthorized();
  }

  /** Resolves an API key (see {@link resolve} for `admitted`). */
  async resolveApiKey(key: string, admitted: Promise<unknown> = Promise.resolve()): Promise<AuthContext> {
    const hash = API_KEY_PATTERN.test(key) ? keyHashOf(key) : undefined;
    this.sweep();
    const cached = hash === undefined || this.refused.has(hash) ? undefined : this.byHash.get(hash);
    if (hash === undefined || !cached) {
      await admitted;
      if (hash === undefined || this.refused.has(hash)) throw unauthorized();
      return this.lookUp(key, hash, undefined);
    }
    const marks = this.options.marks;
    if (!marks) {
      await admitted;
      return cached.context;
    }
    const readAt = this.now();
    if (readAt - cached.marksCheckedAt < (this.options.marksRecheckMs ?? DEFAULT_MARKS_RECHECK_MS)) {
      await admitted;
      return cached.context;
    }
    cached.marksRead ??= marks.read(cached.context.apiKeyId ?? "", cached.context.orgId).finally(() => (cached.marksRead = undefined));
    const [, state] = await Promise.all([admitted, cached.marksRead]);
    if (state.revoked) {
      this.refuse(hash);
      throw unauthorized();
    }
    if (state.orgEpoch === cached.orgEpoch) {
      cached.marksCheckedAt = Math.max(cached.marksCheckedAt, readAt);
      return cached.context;
    }
    // The org changed since: resolve again, under the epoch read before the lookup (a change racing the lookup moves
    // the epoch again and is caught on the next hit).
    this.byHash.delete(hash);
    return this.lookUp(key, hash, state.orgEpoch);
  }

  /** Asks the auth service and caches the answer (a refusal in the negative cache). */
  private async lookUp(key: string, hash: string, orgEpoch: string | undefined): Promise<AuthContext> {
    const askedAt = this.now();
    let context: AuthContext;
    try {
      context = fromProto(await this.callAuth(() => this.options.auth.resolveApiKey({ key })));
    } catch (error) {
      if (error instanceof AppError && error.code === "UNAUTHORIZED") this.refuse(hash);
      throw error;
    }
    if (this.options.ttlMs > 0) {
      const epoch = orgEpoch ?? (this.options.marks ? await this.options.marks.orgEpoch(context.orgId) : "0");
      this.byHash.set(hash, { context, orgEpoch: epoch, marksCheckedAt: askedAt });
    }
    return context;
  }

  async resolveSession(cookie: string): Promise<AuthContext> {
    return fromProto(await this.callAuth(() => this.options.auth.resolveSession({ cookie })));
  }

  /**
   * Resolves an OAuth access token presented to `resource` (the `/mcp` endpoint) through the auth service. Not
   * cached: revoking the grant or signing out must cut the agent off on its very next request.
   */
  async resolveAccessToken(token: string, resource: string): Promise<AuthContext> {
    return fromProto(await this.callAuth(() => this.options.auth.resolveAccessToken({ token, resource })));
  }

  /** Drops a revoked key from the cache, by key id or key hash. */
  forgetApiKey({ apiKeyId, keyHash }: { apiKeyId?: string | undefined; keyHash?: string | undefined }): void {
    if (keyHash) this.byHash.delete(keyHash);
    if (apiKeyId) {
      for (const [hash, entry] of this.byHash.entries()) if (entry.context.apiKeyId === apiKeyId) this.byHash.delete(hash);
    }
  }

  /**
   * A key was revoked: drop it here and mark it in Redis so every replica refuses it within its marks' recheck
   * interval, whether or not the NATS message reaches it. Resolves once the mark is stored.
   */
  async revokeApiKey(event: { apiKeyId?: string | undefined; keyHash?: string | undefined }): Promise<void> {
    this.forgetApiKey(event);
    if (event.keyHash) this.refuse(event.keyHash);
    if (event.apiKeyId) await this.options.marks?.markRevoked(event.apiKeyId);
  }

  /**
   * Resolves once every replica's next request with a key revoked before this call reads its marks: a replica serves
   * a cached key from memory for at most `marksRecheckMs` after a read that started before the mark was stored, so
   * answering a revocation after that long keeps "the next request gets 401 on every gateway" true, even on a
   * replica that missed the NATS message (replicas share the setting; operations.md). Costs the revoking call
   * `AUTH_MARKS_RECHECK_MS`; revocations are rare.
   */
  async outlastMarksRecheck(): Promise<void> {
    const recheckMs = this.options.marks ? (this.options.marksRecheckMs ?? DEFAULT_MARKS_RECHECK_MS) : 0;
    // +1: Date.now() counts whole milliseconds, so "more than recheckMs since the read" needs one more.
    if (recheckMs > 0) await new Promise((resolve) => setTimeout(resolve, recheckMs + 1));
  }

  /** Drops every cached key of an org (its plan changed). */
  forgetOrg(orgId: string): void {
    for (const [hash, entry] of this.byHash.entries()) if (entry.context.orgId === orgId) this.byHash.delete(hash);
  }

  /**
   * An org changed (plan, members or roles): drop its keys here and move its epoch in Redis, so replicas that missed
   * the message resolve its keys again too.
   */
  async orgChanged(orgId: string): Promise<void> {
    this.forgetOrg(orgId);
    await this.options.marks?.bumpOrg(orgId);
  }

  private refuse(hash: string): void {
    this.byHash.delete(hash);
    if ((this.options.negativeTtlMs ?? DEFAULT_NEGATIVE_TTL_MS) > 0) this.refused.set(hash, true);
  }

  /** Drops expired entries at most once per TTL, so keys used once do not sit in memory until evicted. */
  private sweep(): void {
    const now = this.now();
    if (now - this.lastSweep < Math.max(1_000, this.options.ttlMs)) return;
    this.lastSweep = now;
    this.byHash.purgeStale();
    this.refused.purgeStale();
  }

  private async callAuth<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      // Every credential failure is the one documented 401 (UNAUTHORIZED); an unreachable auth service is a 503, never a 500.
      if (error instanceof AppError && error.code === "SERVICE_UNAVAILABLE") throw error;
      if (error instanceof AppError && error.code !== "INTERNAL_ERROR") throw unauthorized();
      throw error;
    }
  }
}

function fromProto(context: auth.AuthContext): AuthContext {
  return {
    userId: context.userId,
    orgId: context.orgId,
    plan: context.plan,
    role: context.role || "member",
    credential: context.credential || "api_key",
    ...(context.apiKeyId ? { apiKeyId: context.apiKeyId } : {}),
  };
}
