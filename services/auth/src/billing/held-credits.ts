import { sql, type Kysely } from "kysely";
import type { Plan, PlanName } from "@renderbus/plans";
import type { AuthTables } from "../database.js";
import { topUpForMonth } from "./monthly-credits.js";

/**
 * Credits held until an email address is confirmed (EMAIL_VERIFICATION=required; SECURITY-AUDIT finding 3). An org a
 * user creates while their address is unconfirmed (their personal org at sign-up included) starts with no credits and
 * `orgs.credits_held_for` naming them; confirming the address releases every org held for them: each gets the
 * current credit month's top-up at once, and monthly renewals skip an org while it is held. Orgs an operator creates
 * or moves to a plan are never held (that is the operator's decision).
 *
 * Better Auth's `afterEmailVerification` releases at once; the renewal loop also releases holds whose user is
 * confirmed (`releaseConfirmedHolds`), so a crash between the two writes, or an org created in the same instant as the
 * confirmation, waits one renewal interval at most.
 */

/** Whether a user's email address is confirmed (Better Auth's `user.emailVerified`). */
export async function isEmailVerified(db: Kysely<AuthTables>, userId: string): Promise<boolean> {
  const user = await db.selectFrom("user").select("emailVerified").where("id", "=", userId).executeTakeFirst();
  return user?.emailVerified === true;
}

/** Releases the credits of every org held for `userId`; returns how many orgs were released. */
export async function releaseHeldCredits(db: Kysely<AuthTables>, plans: Record<PlanName, Plan>, userId: string, now = Date.now()): Promise<number> {
  return db.transaction().execute(async (trx) => {
    const held = await trx.selectFrom("orgs").select(["id", "plan", "created_at"]).where("credits_held_for", "=", userId).forUpdate().execute();
    for (const org of held) {
      await trx.updateTable("orgs").set({ credits_held_for: null, updated_at: now }).where("id", "=", org.id).execute();
      await topUpForMonth(trx, plans, org, now);
    }
    return held.length;
  });
}

/** Releases the holds of users whose address is confirmed (the renewal loop's safety net); returns the orgs released. */
export async function releaseConfirmedHolds(db: Kysely<AuthTables>, plans: Record<PlanName, Plan>, now = Date.now()): Promise<number> {
  const users = await db
    .selectFrom("orgs")
    .innerJoin("user", "user.id", "orgs.credits_held_for")
    .select("user.id")
    .distinct()
    .where("user.emailVerified", "=", sql<boolean>`true`)
    .limit(1000)
    .execute();
  let released = 0;
  for (const { id } of users) released += await releaseHeldCredits(db, plans, id, now);
  return released;
}
