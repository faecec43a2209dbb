import type { Redis } from "ioredis";

/** What Redis says about a cached API key: revoked, and the org's membership epoch. */
export interface CredentialMarkState {
  revoked: boolean;
  /** Changes whenever the org's members, roles or plan change; "0" when nothing changed recently. */
  orgEpoch: string;
}

export interface CredentialMarksOptions {
  /** Key prefix, e.g. `rb:auth` (tests add their namespace so parallel systems sharing one Redis stay apart). */
  prefix: string;
  /** How long a revocation mark lives; must be at least the API-key cache TTL (see {@link CredentialResolver}). */
  revokedTtlMs: number;
}

/** How long an org epoch lives after its last change: far longer than any cache entry. */
const ORG_EPOCH_TTL_MS = 24 * 60 * 60 * 1000;

/**
 * Revocations and membership changes in Redis, shared by every gateway replica, so a replica that missed the NATS
 * message still refuses a revoked key within AUTH_MARKS_RECHECK_MS (finding 14). A cache hit whose marks were
 * last read longer ago than that reads both marks of its entry in one round trip: a revoked key is refused; an org epoch different from the one the entry was resolved
 * under makes the entry resolve again through the auth service (a demoted or removed creator, a changed plan).
 */
export class CredentialMarks {
  constructor(
    private readonly redis: Redis,
    private readonly options: CredentialMarksOptions,
  ) {}

  /** Marks a key revoked on every replica; resolves once Redis has it. */
  async markRevoked(apiKeyId: string): Promise<void> {
    await this.redis.set(this.revokedKey(apiKeyId), "1", "PX", this.options.revokedTtlMs);
  }

  /** Moves the org's epoch on: every replica's cached keys of the org resolve again on their next use. */
  async bumpOrg(orgId: string): Promise<void> {
    await this.redis.multi().incr(this.orgKey(orgId)).pexpire(this.orgKey(orgId), ORG_EPOCH_TTL_MS).exec();
  }

  async orgEpoch(orgId: string): Promise<string> {
    return (await this.redis.get(this.orgKey(orgId))) ?? "0";
  }

  async read(apiKeyId: string, orgId: string): Promise<CredentialMarkState> {
    const [revoked, epoch] = await this.redis.mget(this.revokedKey(apiKeyId), this.orgKey(orgId));
    return { revoked: revoked !== null && revoked !== undefined, orgEpoch: epoch ?? "0" };
  }

  private revokedKey(apiKeyId: string): string {
    return `${this.options.prefix}:revoked:${apiKeyId}`;
  }

  private orgKey(orgId: string): string {
    return `${this.options.prefix}:org-epoch:${orgId}`;
  }
}
