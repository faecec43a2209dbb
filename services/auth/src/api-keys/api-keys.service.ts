import { notFound, unauthorized, validationError } from "@renderbus/errors";
import { newId } from "@renderbus/ids";
import type { auth } from "@renderbus/contracts";
import type { Logger } from "@renderbus/telemetry";
import type { AuthTables } from "../database.js";
import type { AuthResources } from "../auth-resources.js";
import { enqueueApiKeyRevoked, enqueueOrgUpdated } from "../events/auth-events.js";
import { effectiveRole } from "../orgs/membership.js";
import { generateApiKey, hashApiKey, isWellFormedApiKey, keyStart, validKeyName } from "./api-key.js";

type ApiKeyRow = AuthTables["api_keys"];

/** The key record as the API shows it: never the key or its hash. */
export function apiKeyView(row: ApiKeyRow): auth.ApiKey {
  return {
    id: row.id,
    name: row.name,
    start: row.start,
    createdAt: row.created_at,
    lastUsedAt: row.last_used_at ?? undefined,
    revokedAt: row.revoked_at ?? undefined,
  };
}

/** Creates an org-scoped key; the full key is in the result and nowhere else, ever. */
export async function createApiKey(store: AuthResources, orgId: string, createdBy: string, name: string): Promise<auth.CreateApiKeyResponse> {
  const validName = validKeyName(name);
  if (validName === undefined) throw validationError("name must be 1-100 characters");
  const key = generateApiKey();
  const row: ApiKeyRow = {
    id: newId("key"),
    org_id: orgId,
    name: validName,
    key_hash: hashApiKey(key),
    start: keyStart(key),
    created_by: createdBy,
    created_at: Date.now(),
    last_used_at: null,
    revoked_at: null,
  };
  await store.db.insertInto("api_keys").values(row).execute();
  return { apiKey: apiKeyView(row), key };
}

/** The org's keys, newest first, revoked ones included (with `revokedAt`). */
export async function listApiKeys(store: AuthResources, orgId: string): Promise<auth.ApiKey[]> {
  const rows = await store.db.selectFrom("api_keys").selectAll().where("org_id", "=", orgId).orderBy("id", "desc").execute();
  return rows.map(apiKeyView);
}

/**
 * Revokes a key of the org and announces it (`auth.events.api_key.revoked`, through the outbox) so every gateway
 * drops it from its cache. Revoking a revoked key returns it unchanged. A key of another org is NOT_FOUND.
 */
export async function revokeApiKey(store: AuthResources, orgId: string, keyId: string): Promise<auth.ApiKey> {
  return store.db.transaction().execute(async (trx) => {
    const row = await trx.selectFrom("api_keys").selectAll().where("id", "=", keyId).where("org_id", "=", orgId).forUpdate().executeTakeFirst();
    if (!row) throw notFound("API key");
    if (row.revoked_at !== null) return apiKeyView(row);
    const revokedAt = Date.now();
    await trx.updateTable("api_keys").set({ revoked_at: revokedAt }).where("id", "=", keyId).execute();
    await enqueueApiKeyRevoked(trx, { orgId, apiKeyId: keyId, keyHash: row.key_hash, occurredAt: revokedAt });
    return apiKeyView({ ...row, revoked_at: revokedAt });
  });
}

/** Writes `last_used_at` at most once per interval per key, so resolving a key stays one read on the hot path. */
export class LastUsedRecorder {
  private readonly written = new Map<string, number>();

  constructor(
    private readonly store: AuthResources,
    private readonly logger?: Logger,
    private readonly intervalMs = 60_000,
  ) {}

  record(keyId: string, lastUsedAt: number | null, now = Date.now()): void {
    const last = Math.max(this.written.get(keyId) ?? 0, lastUsedAt ?? 0);
    if (now - last < this.intervalMs) return;
    this.written.set(keyId, now);
    if (this.written.size > 100_000) this.written.clear(); // bound memory; worst case is one extra write per key
    void this.store.db
      .updateTable("api_keys")
      .set({ last_used_at: now })
      .where("id", "=", keyId)
      .where((eb) => eb.or([eb("last_used_at", "is", null), eb("last_used_at", "<", now - this.intervalMs)]))
      .execute()
      .catch((error: unknown) => this.logger?.warn({ err: error, apiKeyId: keyId }, "could not record key use"));
  }
}

/**
 * Resolves a bearer key to its auth context (userId = the key's creator). A key acts with its creator's current role
 * in the key's org, read from Better Auth's `member` table on every resolution: a demoted admin's keys act as a
 * member from then on, and a creator who is no longer a member of the org (removed, or left) makes the key refused.
 * @throws AppError UNAUTHORIZED when the key is malformed, unknown or revoked, or its creator is not a member.
 */
export async function resolveApiKey(store: AuthResources, key: string, lastUsed?: LastUsedRecorder): Promise<auth.AuthContext> {
  if (!isWellFormedApiKey(key)) throw unauthorized();
  const row = await store.db
    .selectFrom("api_keys")
    .innerJoin("orgs", "orgs.id", "api_keys.org_id")
    .innerJoin("member", (join) => join.onRef("member.organizationId", "=", "api_keys.org_id").onRef("member.userId", "=", "api_keys.created_by"))
    .select(["api_keys.id", "api_keys.org_id", "api_keys.created_by", "api_keys.revoked_at", "api_keys.last_used_at", "orgs.plan", "member.role"])
    .where("api_keys.key_hash", "=", hashApiKey(key))
    .executeTakeFirst();
  if (!row || row.revoked_at !== null) throw unauthorized();
  lastUsed?.record(row.id, row.last_used_at);
  return { userId: row.created_by, orgId: row.org_id, plan: row.plan, apiKeyId: row.id, credential: "api_key", role: effectiveRole(row.role) };
}

/**
 * Revokes every live key `userId` created in `orgId`, announcing each (`auth.events.api_key.revoked`) so gateways
 * refuse them at once; run when the member is removed or leaves. Resolution already refuses a non-member's keys,
 * this makes it visible in the key list and survives the person being invited back. Returns how many were revoked.
 */
export async function revokeKeysOfMember(store: AuthResources, orgId: string, userId: string): Promise<number> {
  return store.db.transaction().execute(async (trx) => {
    const revokedAt = Date.now();
    const rows = await trx
      .updateTable("api_keys")
      .set({ revoked_at: revokedAt })
      .where("org_id", "=", orgId)
      .where("created_by", "=", userId)
      .where("revoked_at", "is", null)
      .returning(["id", "key_hash"])
      .execute();
    for (const row of rows) await enqueueApiKeyRevoked(trx, { orgId, apiKeyId: row.id, keyHash: row.key_hash, occurredAt: revokedAt });
    return rows.length;
  });
}

/**
 * Announces that a member's role in `orgId` changed (`auth.events.org.updated`, through the outbox), so gateways
 * drop the org's cached key resolutions and the creator's keys act with the new role at once.
 */
export async function announceMembershipChanged(store: AuthResources, orgId: string): Promise<void> {
  await store.db.transaction().execute(async (trx) => {
    const org = await trx.selectFrom("orgs").select("plan").where("id", "=", orgId).executeTakeFirst();
    if (org) await enqueueOrgUpdated(trx, { orgId, plan: org.plan, occurredAt: Date.now() });
  });
}
