import { sql, type Kysely } from "kysely";
import type { AuthTables } from "../database.js";

/** The window of ENDPOINT_ALERTS_PER_ORG_PER_HOUR. */
const ALERT_WINDOW_MS = 60 * 60 * 1000;

/** What becomes of a disable's email: sent, not sent (its endpoint's disable was mailed within the hour), not sent (the org's limit). */
export type AlertAdmission = "admitted" | "repeat" | "limited";

/**
 * Whether the disable `eventId` of `endpointId` of `orgId` may be mailed: at most `perHour` of an org's disables are,
 * in any hour, and an endpoint's disable only when no disable of that endpoint was mailed within the hour.
 *
 * A member who can manage endpoints can disable one at will (a receiver answering 410 to a test event, then enabling
 * it again): without a limit, every round of that mails every owner and admin of the org, and cycling one endpoint
 * used up the org's places, so the disable of another endpoint in that hour went unmailed. The org's admins heard of
 * the endpoint with its first email, and the dashboard shows its state. A disable admitted once stays admitted (a
 * redelivery, a mail server that refused, mails whoever was not mailed yet); one refused is logged by the caller and
 * stays visible on the dashboard. Replicas take the org's lock, so two disables handled at once cannot both take its
 * last place.
 */
export async function admitAlert(
  db: Kysely<AuthTables>,
  { orgId, endpointId, eventId }: { orgId: string; endpointId: string; eventId: string },
  perHour: number,
  now = Date.now(),
): Promise<AlertAdmission> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtextextended(${`alert-limit:${orgId}`}, 0))`.execute(trx);
    const admitted = await trx.selectFrom("alert_events").select("event_id").where("event_id", "=", eventId).executeTakeFirst();
    if (admitted) return "admitted";
    const since = now - ALERT_WINDOW_MS;
    const sameEndpoint = await trx
      .selectFrom("alert_events")
      .select("event_id")
      .where("org_id", "=", orgId)
      .where("endpoint_id", "=", endpointId)
      .where("admitted_at", ">", since)
      .executeTakeFirst();
    if (sameEndpoint) return "repeat";
    const { recent } = await trx
      .selectFrom("alert_events")
      .select((eb) => eb.fn.countAll<string>().as("recent"))
      .where("org_id", "=", orgId)
      .where("admitted_at", ">", since)
      .executeTakeFirstOrThrow();
    if (Number(recent) >= perHour) return "limited";
    await trx.insertInto("alert_events").values({ event_id: eventId, org_id: orgId, endpoint_id: endpointId, admitted_at: now }).execute();
    return "admitted";
  });
}
