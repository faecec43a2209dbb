import type { Kysely, Transaction } from "kysely";
import { planOf, type Plan, type PlanName } from "@renderbus/plans";
import type { AuthTables } from "../database.js";
import { topUpCredits } from "./credit-ledger.js";

/**
 * Monthly included credits (docs/concepts.md#credits). An org's credit months run from its creation date, like a subscription's
 * billing anchor: month n starts at `created_at + n months` (a 31st anchor falls on the last day of shorter months).
 * At the start of each month the org's available credits are topped up to its plan's monthly credits: a `grant` of
 * the difference, none when it has that many or more. Unused included credits do not pile up month after month, and
 * nothing is ever taken away (credits an operator granted on top stay). A plan change tops up to the new plan's
 * credits at once, so an upgrade does not wait for the next month.
 */

/** `ms` plus `months` calendar months in UTC, on the same day of the month or the last day of a shorter month. */
export function addMonthsUtc(ms: number, months: number): number {
  const date = new Date(ms);
  const target = new Date(ms);
  target.setUTCDate(1);
  target.setUTCMonth(date.getUTCMonth() + months);
  const lastDay = new Date(Date.UTC(target.getUTCFullYear(), target.getUTCMonth() + 1, 0)).getUTCDate();
  target.setUTCDate(Math.min(date.getUTCDate(), lastDay));
  return target.getTime();
}

/** Which credit month `now` falls in for an org created at `createdAt` (0 = the month it was created in). */
export function creditMonthAt(createdAt: number, now: number): number {
  const from = new Date(createdAt);
  const to = new Date(now);
  let month = Math.max(0, (to.getUTCFullYear() - from.getUTCFullYear()) * 12 + to.getUTCMonth() - from.getUTCMonth());
  while (month > 0 && addMonthsUtc(createdAt, month) > now) month -= 1;
  return month;
}

/** When the credit month after the one `now` falls in starts. */
export function nextCreditRenewal(createdAt: number, now: number): number {
  return addMonthsUtc(createdAt, creditMonthAt(createdAt, now) + 1);
}

/** Tops the org up to `plan`'s monthly credits for the credit month `now` falls in; returns the credits granted. */
export async function topUpForMonth(trx: Transaction<AuthTables>, plans: Record<PlanName, Plan>, org: { id: string; plan: PlanName; created_at: number }, now: number): Promise<number> {
  const month = creditMonthAt(org.created_at, now);
  return topUpCredits(trx, org.id, planOf(org.plan, plans).monthlyCredits, `monthly:${org.id}:${month}:${org.plan}`, `monthly credits of plan ${org.plan}`);
}

/**
 * Renews the orgs whose credit month has turned (`credits_renew_at <= now`), `batch` at a time, each in its own
 * transaction; rows another replica is renewing are skipped. Returns how many orgs were renewed.
 */
export async function renewDueCredits(db: Kysely<AuthTables>, plans: Record<PlanName, Plan>, now = Date.now(), batch = 100): Promise<number> {
  let renewed = 0;
  for (;;) {
    const done = await db.transaction().execute(async (trx) => {
      const due = await trx
        .selectFrom("orgs")
        .select(["id", "plan", "created_at"])
        .where("credits_renew_at", "<=", now)
        // A held org gets this month's credits when its creator confirms their address (held-credits.ts).
        .where("credits_held_for", "is", null)
        .orderBy("credits_renew_at")
        .limit(batch)
        .forUpdate()
        .skipLocked()
        .execute();
      for (const org of due) {
        await topUpForMonth(trx, plans, org, now);
        await trx.updateTable("orgs").set({ credits_renew_at: nextCreditRenewal(org.created_at, now) }).where("id", "=", org.id).execute();
      }
      return due.length;
    });
    renewed += done;
    if (done < batch) return renewed;
  }
}
