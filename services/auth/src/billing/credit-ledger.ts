import { sql, type Kysely, type Transaction } from "kysely";
import { insufficientCredits, notFound, validationError } from "@renderbus/errors";
import { isId, newId } from "@renderbus/ids";
import type { AuthTables, LedgerKind } from "../database.js";

/**
 * The credit ledger. Every change to an org's balance row is made in the same transaction as the ledger entry that
 * explains it, so at every commit:
 *   available = sum(grant) - sum(reserve) + sum(release)
 *   reserved  = sum(reserve) - sum(capture) - sum(release)
 * Reservations take credits from `available` with a conditional update (`where available >= n`), which the row
 * lock serialises: concurrent reservations can never overspend and the balance never goes below zero.
 */

type Db = Kysely<AuthTables>;
type Executor = Db | Transaction<AuthTables>;

export interface BalanceView {
  orgId: string;
  available: number;
  reserved: number;
}

interface EntryInput {
  orgId: string;
  kind: LedgerKind;
  credits: number;
  jobId?: string;
  entryKey?: string;
  balanceAfter: number;
  description: string;
}

async function insertEntry(trx: Transaction<AuthTables>, entry: EntryInput): Promise<boolean> {
  const inserted = await trx
    .insertInto("credit_ledger")
    .values({
      id: newId("led"),
      org_id: entry.orgId,
      kind: entry.kind,
      credits: entry.credits,
      job_id: entry.jobId ?? null,
      entry_key: entry.entryKey ?? null,
      balance_after: entry.balanceAfter,
      description: entry.description,
      created_at: Date.now(),
    })
    .onConflict((conflict) => conflict.column("entry_key").doNothing())
    .returning("id")
    .executeTakeFirst();
  return inserted !== undefined;
}

/** Creates the org's balance row at zero (part of creating an org). */
export async function openBalance(trx: Transaction<AuthTables>, orgId: string): Promise<void> {
  await trx.insertInto("credit_balances").values({ org_id: orgId, available: 0, reserved: 0, updated_at: Date.now() }).execute();
}

/** The org's balance. @throws AppError NOT_FOUND for an unknown org. */
export async function balanceOf(db: Executor, orgId: string): Promise<BalanceView> {
  const row = await db.selectFrom("credit_balances").select(["available", "reserved"]).where("org_id", "=", orgId).executeTakeFirst();
  if (!row) throw notFound("Organization");
  return { orgId, available: row.available, reserved: row.reserved };
}

/** Adds credits to an org (monthly plan credits, operator grants) with a `grant` entry, keyed by `entryKey` when given. */
export async function grantCredits(trx: Transaction<AuthTables>, orgId: string, credits: number, description: string, entryKey?: string): Promise<BalanceView> {
  const row = await trx
    .updateTable("credit_balances")
    .set({ available: sql`available + ${credits}`, updated_at: Date.now() })
    .where("org_id", "=", orgId)
    .returning(["available", "reserved"])
    .executeTakeFirst();
  if (!row) throw notFound("Organization");
  await insertEntry(trx, { orgId, kind: "grant", credits, ...(entryKey ? { entryKey } : {}), balanceAfter: row.available, description });
  return { orgId, available: row.available, reserved: row.reserved };
}

/**
 * Raises the org's available credits to `allowance` with a `grant` of the difference, once per `entryKey`; an org at
 * or above it gets nothing (and nothing is ever taken away). Returns the credits granted. The balance row is locked
 * first, so two callers with the same key (a renewal sweep and a plan change) cannot both grant.
 */
export async function topUpCredits(trx: Transaction<AuthTables>, orgId: string, allowance: number, entryKey: string, description: string): Promise<number> {
  const balance = await trx.selectFrom("credit_balances").select("available").where("org_id", "=", orgId).forUpdate().executeTakeFirst();
  if (!balance) throw notFound("Organization");
  const credits = allowance - balance.available;
  if (credits <= 0) return 0;
  const granted = await trx.selectFrom("credit_ledger").select("id").where("entry_key", "=", entryKey).executeTakeFirst();
  if (granted) return 0;
  await grantCredits(trx, orgId, credits, description, entryKey);
  return credits;
}

/**
 * Makes the job's reservation at least `credits` in total: the first call reserves `credits`, a later call with more
 * reserves the difference (the worker reserves the job type's minimum before it downloads the input and tops that
 * up once the input is measured), a call with the same or fewer credits changes nothing. So a redelivered job
 * reserving again is harmless. A call for a job already settled (it ended before its worker got here) changes
 * nothing either. Returns the org's balance.
 * @throws AppError INSUFFICIENT_CREDITS when the available balance cannot cover the difference (what was reserved
 *   before stays reserved until the job is settled).
 */
export async function reserveCredits(db: Db, orgId: string, jobId: string, credits: number): Promise<BalanceView> {
  return db.transaction().execute(async (trx) => {
    // The org's balance row first, like settleJob: a reservation and the job's settlement never interleave, and two
    // reservations for one job run one after the other (the second sees the first's entry).
    const balance = await trx.selectFrom("credit_balances").select(["available", "reserved"]).where("org_id", "=", orgId).forUpdate().executeTakeFirst();
    if (!balance) return balanceOf(trx, orgId); // NOT_FOUND for an unknown org
    // The job ended before its worker got here (cancelled meanwhile): the worker's StartJob then answers CONFLICT
    // and nothing runs, so nothing may be reserved.
    const settled = await trx.selectFrom("settled_jobs").select("job_id").where("org_id", "=", orgId).where("job_id", "=", jobId).executeTakeFirst();
    if (settled) return { orgId, available: balance.available, reserved: balance.reserved };
    const entries = await trx.selectFrom("credit_ledger").select("credits").where("job_id", "=", jobId).where("org_id", "=", orgId).where("kind", "=", "reserve").execute();
    const reservedBefore = entries.reduce((sum, entry) => sum + entry.credits, 0);
    const difference = credits - reservedBefore;
    if (difference <= 0) return { orgId, available: balance.available, reserved: balance.reserved };
    if (balance.available < difference) throw insufficientCredits();
    const row = await trx
      .updateTable("credit_balances")
      .set({ available: sql`available - ${difference}`, reserved: sql`reserved + ${difference}`, updated_at: Date.now() })
      .where("org_id", "=", orgId)
      .returning(["available", "reserved"])
      .executeTakeFirstOrThrow();
    // One key per reserved total: the first is `reserve:<job>` (as before top-ups existed), a top-up to N `reserve:<job>:N`.
    const entryKey = reservedBefore === 0 ? `reserve:${jobId}` : `reserve:${jobId}:${credits}`;
    const description = reservedBefore === 0 ? `reserved for ${jobId}` : `reservation for ${jobId} raised to ${credits}`;
    const inserted = await insertEntry(trx, { orgId, kind: "reserve", credits: difference, jobId, entryKey, balanceAfter: row.available, description });
    // Unreachable under the row lock after the sum above; rolls the balance change back rather than leave it unbooked.
    if (!inserted) throw new Error(`reservation for ${jobId} already booked`);
    return { orgId, available: row.available, reserved: row.reserved };
  });
}

/** How a job ended, for settling its reservation. */
export type JobSettlement = { outcome: "completed"; credits: number; description?: string } | { outcome: "released"; reason: string };

/** What settling did: credits captured, and the part of a completed job's cost its reservation did not cover. */
export interface SettlementResult {
  /** False when the job had been settled before (a redelivery): nothing changed. */
  settled: boolean;
  captured: number;
  /**
   * Credits of the cost above the job's reservation. The worker never reports a cost its reservation does not cover
   * (it caps the output at what is reserved and tops the reservation up before completing), so anything but 0 is a
   * broken invariant: the caller logs it as an error. What the balance still held was captured towards it.
   */
  shortfall: number;
  /** The part of the shortfall the balance could not pay (it never goes below zero). */
  uncollected: number;
}

/**
 * Settles a finished job: on completion captures its cost (`cost.credits`, the price of the output produced) from
 * the job's reservation and releases the rest; on failure or cancellation releases the whole reservation.
 * Idempotent: a job is settled once, whatever the number of redeliveries.
 */
export async function settleJob(db: Db, orgId: string, jobId: string, settlement: JobSettlement): Promise<SettlementResult> {
  return db.transaction().execute(async (trx) => {
    const nothing: SettlementResult = { settled: false, captured: 0, shortfall: 0, uncollected: 0 };
    // Locks the org's balance row: settlements and reservations of the org are serialised from here on.
    const balance = await trx
      .selectFrom("credit_balances")
      .select(["available", "reserved"])
      .where("org_id", "=", orgId)
      .forUpdate()
      .executeTakeFirst();
    if (!balance) return nothing; // an org we do not know (deleted): nothing to charge
    // Settled once: the marker also stands when nothing was reserved, so a late reservation is refused.
    const first = await trx
      .insertInto("settled_jobs")
      .values({ org_id: orgId, job_id: jobId, settled_at: Date.now() })
      .onConflict((conflict) => conflict.columns(["org_id", "job_id"]).doNothing())
      .returning("job_id")
      .executeTakeFirst();
    if (!first) return nothing;
    const entries = await trx.selectFrom("credit_ledger").select(["kind", "credits"]).where("job_id", "=", jobId).where("org_id", "=", orgId).execute();
    let reservedForJob = entries.filter((entry) => entry.kind === "reserve").reduce((sum, entry) => sum + entry.credits, 0);
    let { available, reserved } = balance;
    const result: SettlementResult = { settled: true, captured: 0, shortfall: 0, uncollected: 0 };

    if (settlement.outcome === "completed") {
      // Never capture less than the cost because the reservation was smaller: the reservation covers the cost by
      // construction (see SettlementResult.shortfall); should it not, the balance pays what it can towards it.
      result.shortfall = Math.max(settlement.credits - reservedForJob, 0);
      const extra = Math.min(result.shortfall, available);
      result.uncollected = result.shortfall - extra;
      if (extra > 0) {
        available -= extra;
        reserved += extra;
        reservedForJob += extra;
        await insertEntry(trx, { orgId, kind: "reserve", credits: extra, jobId, entryKey: `reserve-extra:${jobId}`, balanceAfter: available, description: `cost of ${jobId} above its reservation` });
      }
      result.captured = Math.min(settlement.credits, reservedForJob);
      reserved -= result.captured;
      await insertEntry(trx, { orgId, kind: "capture", credits: result.captured, jobId, entryKey: `capture:${jobId}`, balanceAfter: available, description: settlement.description ?? `charged for ${jobId}` });
      reservedForJob -= result.captured;
    }
    if (reservedForJob > 0) {
      available += reservedForJob;
      reserved -= reservedForJob;
      const reason = settlement.outcome === "released" ? settlement.reason : "completed";
      await insertEntry(trx, { orgId, kind: "release", credits: reservedForJob, jobId, entryKey: `release:${jobId}`, balanceAfter: available, description: `released for ${jobId} (${reason})` });
    }
    await trx.updateTable("credit_balances").set({ available, reserved, updated_at: Date.now() }).where("org_id", "=", orgId).execute();
    return result;
  });
}

export interface LedgerPage {
  entries: AuthTables["credit_ledger"][];
  nextCursor: string | undefined;
}

/** The org's ledger, newest first; the cursor is the last entry id of the previous page. */
export async function listLedger(db: Db, orgId: string, limit: number, cursor?: string): Promise<LedgerPage> {
  // A cursor we never issued would silently restart the listing (or skip entries); say so instead.
  if (cursor && !isId("led", cursor)) throw validationError("cursor: is invalid");
  let query = db.selectFrom("credit_ledger").selectAll().where("org_id", "=", orgId).orderBy("id", "desc").limit(limit + 1);
  if (cursor) query = query.where("id", "<", cursor);
  const rows = await query.execute();
  const entries = rows.slice(0, limit);
  return { entries, nextCursor: rows.length > limit ? entries.at(-1)?.id : undefined };
}
