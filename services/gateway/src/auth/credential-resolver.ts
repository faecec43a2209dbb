import { createHash } from "node:crypto";
import type { auth } from "@renderbus/contracts";
import { AppError, unauthorized } from "@renderbus/errors";
import type { AuthContext, PromiseClient } from "@renderbus/rpc";

interface CacheEntry {
  context: AuthContext;
  expiresAt: number;
}

export interface CredentialResolverOptions {
  auth: PromiseClient<auth.AuthClient>;
  ttlMs: number;
  now?: () => number;
}

/** API keys are `rb_` + base64url; anything else is refused before any lookup. */
const API_KEY_PATTERN = /^rb_[A-Za-z0-9_-]{40,100}$/;

export const keyHashOf = (key: string): string => createHash("sha256").update(key).digest("hex");

/**
 * Resolves a request's credential (Bearer API key or the dashboard's session cookie) to the auth context.
 * API key lookups are cached by key hash for a short TTL; revocation events drop entries at once (see
 * `forgetApiKey`), and the TTL is the safety net for a missed event. Sessions are not cached: sign-out must be
 * immediate and dashboard traffic is light.
 */
export class CredentialResolver {
  private readonly byHash = new Map<string, CacheEntry>();
  private readonly now: () => number;

  constructor(private readonly options: CredentialResolverOptions) {
    this.now = options.now ?? Date.now;
  }

  async resolve(headers: { authorization?: string | undefined; cookie?: string | undefined }): Promise<AuthContext> {
    const authorization = headers.authorization;
    if (authorization !== undefined) {
      const match = /^Bearer ([^\s]+)$/i.exec(authorization.trim());
      if (!match?.[1]) throw unauthorized();
      return this.resolveApiKey(match[1]);
    }
    if (headers.cookie && /(?:^|;\s*)rb_session=/.test(headers.cookie)) {
      return this.resolveSession(headers.cookie);
    }
    throw unauthorized();
  }

  async resolveApiKey(key: string): Promise<AuthContext> {
    if (!API_KEY_PATTERN.test(key)) throw unauthorized();
    const hash = keyHashOf(key);
    const cached = this.byHash.get(hash);
    if (cached && cached.expiresAt > this.now()) return cached.context;
    const context = fromProto(await this.callAuth(() => this.options.auth.resolveApiKey({ key })));
    if (this.options.ttlMs > 0) this.byHash.set(hash, { context, expiresAt: this.now() + this.options.ttlMs });
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
  forgetApiKey({ apiKeyId, keyHash }: { apiKeyId?: string; keyHash?: string }): void {
    if (keyHash) this.byHash.delete(keyHash);
    if (apiKeyId) {
      for (const [hash, entry] of this.byHash) if (entry.context.apiKeyId === apiKeyId) this.byHash.delete(hash);
    }
  }

  /** Drops every cached key of an org (its plan changed). */
  forgetOrg(orgId: string): void {
    for (const [hash, entry] of this.byHash) if (entry.context.orgId === orgId) this.byHash.delete(hash);
  }

  private async callAuth<T>(call: () => Promise<T>): Promise<T> {
    try {
      return await call();
    } catch (error) {
      // Every credential failure is the one SPEC 401; an unreachable auth service is a 503, never a 500.
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
