import { createHash } from "node:crypto";
import type { Kysely, Transaction } from "kysely";
import { AppError, conflict, validationError } from "@renderbus/errors";
import type { JobsDatabase } from "../db/jobs-database.js";

/** The outcome of claiming a key: run the request, or answer with the stored first response. */
export type IdempotencyClaim = { kind: "claimed" } | { kind: "replay"; response: unknown };

export interface IdempotencyScope {
  orgId: string;
  key: string;
}

export interface ClaimOptions extends IdempotencyScope {
  requestHash: string;
  now: number;
  /** Keys older than this are forgotten (24 h). */
  ttlMs: number;
  /** A pending key older than this belongs to a request that died; a new request may take it over. */
  staleMs: number;
}

/** Checks the header value before it touches storage. */
export function assertIdempotencyKey(key: string): void {
  if (key.length < 1 || key.length > 255) throw validationError("Idempotency-Key: must be 1 to 255 characters");
}

/**
 * Hash of the request as the client sent it: JSON with sorted object keys, so key order does not make two equal
 * bodies different. `operation` keeps one key from answering for two different endpoints.
 */
export function requestHash(operation: string, body: unknown): string {
  return createHash("sha256").update(`${operation}\n${canonicalJson(body)}`).digest("hex");
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(",")}]`;
  if (value && typeof value === "object") {
    const entries = Object.entries(value as Record<string, unknown>)
      .filter(([, item]) => item !== undefined)
      .sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([name, item]) => `${JSON.stringify(name)}:${canonicalJson(item)}`).join(",")}}`;
  }
  return JSON.stringify(value ?? null);
}

/**
 * Claims an Idempotency-Key for one request. The claim is committed on its own (autocommit), so a concurrent
 * request with the same key sees it at once: of N identical concurrent requests exactly one runs, the others get
 * CONFLICT until it finishes and the stored response afterwards.
 * @throws AppError IDEMPOTENCY_KEY_REUSED for a different body, CONFLICT while the first request is in flight.
 */
export async function claimIdempotencyKey(db: Kysely<JobsDatabase>, options: ClaimOptions): Promise<IdempotencyClaim> {
  const { orgId, key, requestHash: hash, now } = options;
  for (let attempt = 0; attempt < 5; attempt += 1) {
    const inserted = await db
      .insertInto("idempotency_keys")
      .values({ org_id: orgId, key, request_hash: hash, state: "pending", response: "null", created_at: now })
      .onConflict((conflictClause) => conflictClause.columns(["org_id", "key"]).doNothing())
      .returning("key")
      .executeTakeFirst();
    if (inserted) return { kind: "claimed" };

    const existing = await db
      .selectFrom("idempotency_keys")
      .selectAll()
      .where("org_id", "=", orgId)
      .where("key", "=", key)
      .executeTakeFirst();
    if (!existing) continue; // released between our insert and select
    if (existing.created_at < now - options.ttlMs) {
      await db.deleteFrom("idempotency_keys").where("org_id", "=", orgId).where("key", "=", key).where("created_at", "=", existing.created_at).execute();
      continue;
    }
    if (existing.request_hash !== hash) {
      throw new AppError("IDEMPOTENCY_KEY_REUSED", "Idempotency-Key was already used with a different request body");
    }
    if (existing.state === "done") return { kind: "replay", response: existing.response };
    if (existing.created_at < now - options.staleMs) {
      const takenOver = await db
        .updateTable("idempotency_keys")
        .set({ created_at: now })
        .where("org_id", "=", orgId)
        .where("key", "=", key)
        .where("state", "=", "pending")
        .where("created_at", "=", existing.created_at)
        .returning("key")
        .executeTakeFirst();
      if (takenOver) return { kind: "claimed" };
      continue;
    }
    throw conflict("A request with this Idempotency-Key is still in progress; retry later");
  }
  throw conflict("A request with this Idempotency-Key is still in progress; retry later");
}

/**
 * Stores the response in the transaction that creates the resource, so the key and the resource commit together.
 * `claimedAt` is the `now` the claim was made with.
 */
export async function completeIdempotencyKey(
  trx: Transaction<JobsDatabase>,
  scope: IdempotencyScope,
  claimedAt: number,
  response: unknown,
): Promise<void> {
  const result = await trx
    .updateTable("idempotency_keys")
    .set({ state: "done", response: JSON.stringify(response) })
    .where("org_id", "=", scope.orgId)
    .where("key", "=", scope.key)
    .where("state", "=", "pending")
    .where("created_at", "=", claimedAt)
    .executeTakeFirst();
  // Our claim went stale and another request took it over: roll back rather than create a second resource.
  if (Number(result.numUpdatedRows) !== 1) throw conflict("A request with this Idempotency-Key is still in progress; retry later");
}

/** Frees a claim whose request failed (validation, credits, ...), so the client may retry with the same key. */
export async function releaseIdempotencyKey(db: Kysely<JobsDatabase>, scope: IdempotencyScope, claimedAt: number): Promise<void> {
  await db
    .deleteFrom("idempotency_keys")
    .where("org_id", "=", scope.orgId)
    .where("key", "=", scope.key)
    .where("state", "=", "pending")
    .where("created_at", "=", claimedAt)
    .execute();
}
