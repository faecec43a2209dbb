import type { Kysely, Transaction } from "kysely";
import type { JobsDatabase } from "../db/jobs-database.js";
import { assertIdempotencyKey, claimIdempotencyKey, completeIdempotencyKey, releaseIdempotencyKey, requestHash } from "./idempotency-keys.js";

export interface IdempotencyOptions {
  orgId: string;
  /** The client's Idempotency-Key; without one the request simply runs. */
  key: string | undefined;
  operation: string;
  body: unknown;
  ttlMs: number;
  staleMs: number;
}

/** Called by the operation inside its writing transaction with the response it is about to return. */
export type RecordResponse = (trx: Transaction<JobsDatabase>, response: unknown) => Promise<void>;

/**
 * Runs a creating operation under an Idempotency-Key (Stripe semantics): the first request runs and its response is
 * stored in the same transaction as the resource; a repeat with the same body replays it; a failed first request
 * frees the key so the client may retry.
 */
export async function withIdempotency<R>(
  db: Kysely<JobsDatabase>,
  options: IdempotencyOptions,
  run: (recordResponse: RecordResponse) => Promise<R>,
): Promise<{ response: R; replayed: boolean }> {
  if (options.key === undefined) return { response: await run(async () => undefined), replayed: false };
  assertIdempotencyKey(options.key);
  const scope = { orgId: options.orgId, key: options.key };
  const claimedAt = Date.now();
  const claim = await claimIdempotencyKey(db, {
    ...scope,
    requestHash: requestHash(options.operation, options.body),
    now: claimedAt,
    ttlMs: options.ttlMs,
    staleMs: options.staleMs,
  });
  if (claim.kind === "replay") return { response: claim.response as R, replayed: true };
  try {
    const response = await run((trx, value) => completeIdempotencyKey(trx, scope, claimedAt, value));
    return { response, replayed: false };
  } catch (error) {
    await releaseIdempotencyKey(db, scope, claimedAt).catch(() => undefined);
    throw error;
  }
}
