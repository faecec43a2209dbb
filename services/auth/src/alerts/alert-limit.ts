import { sql, type Kysely } from "kysely";
import type { AuthTables } from "../database.js";

/** The window of ENDPOINT_ALERTS_PER_ORG_PER_HOUR. */
const ALERT_WINDOW_MS = 60 * 60 * 1000;

/**
 * Whether the disable `eventId` of `orgId` may be mailed: at most `perHour` of an org's disables are, in any hour.
 *
 * A member who can manage endpoints can disable one at will (a receiver answering 410 to a test event, then enabling
 * it again): without a limit, every round of that mails every owner and admin of the org. A disable admitted once
 * stays admitted (a redelivery, a mail server that refused, mails whoever was not mailed yet); one refused is logged
 * by the caller and stays visible on the dashboard. Replicas take the org's lock, so two disables handled at once
 * cannot both take its last place.
 */
export async function admitAlert(db: Kysely<AuthTables>, orgId: string, eventId: string, perHour: number, now = Date.now()): Promise<boolean> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtextextended(${`alert-limit:${orgId}`}, 0))`.execute(trx);
    const admitted = await trx.selectFrom("alert_events").select("event_id").where("event_id", "=", eventId).executeTakeFirst();
    if (admitted) return true;
    const { recent } = await trx
      .selectFrom("alert_events")
      .select((eb) => eb.fn.countAll<string>().as("recent"))
      .where("org_id", "=", orgId)
      .where("admitted_at", ">", now - ALERT_WINDOW_MS)
      .executeTakeFirstOrThrow();
    if (Number(recent) >= perHour) return false;
    await trx.insertInto("alert_events").values({ event_id: eventId, org_id: orgId, admitted_at: now }).execute();
    return true;
  });
}
