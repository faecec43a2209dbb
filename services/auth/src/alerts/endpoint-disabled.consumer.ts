import type { Kysely } from "kysely";
import { STREAMS, type Bus, type ConsumerHandle } from "@renderbus/bus";
import { webhooks } from "@renderbus/contracts";
import type { Logger } from "@renderbus/telemetry";
import type { AuthTables } from "../database.js";
import type { Mailer } from "../email/mailer.js";
import { admitAlert } from "./alert-limit.js";
import { alertRecipients } from "./alert-recipients.js";
import { endpointDisabledEmail } from "./endpoint-disabled-email.js";

/** Durable consumer name: auth replicas share it, so each disable is mailed by one of them. */
export const ENDPOINT_ALERTS_DURABLE = "auth-endpoint-alerts";
/** The dispatcher's announcement of an endpoint it disabled by itself (proto EndpointDisabled). */
export const ENDPOINT_DISABLED_SUBJECT = "webhooks.events.endpoint.disabled";

/**
 * How long a mail server may refuse before an alert is given up: a retry a minute (ALERT_RETRY_DELAY_MS) for an hour.
 * The endpoint stays disabled and shown so on the dashboard either way; only the email is lost, and logged.
 */
export const ALERT_MAX_DELIVER = 60;
export const ALERT_RETRY_DELAY_MS = 60_000;

export interface EndpointAlertsOptions {
  bus: Bus;
  db: Kysely<AuthTables>;
  mailer: Mailer;
  /** PUBLIC_URL: the dashboard's links. */
  publicUrl: string;
  logger?: Logger;
  /** Wait before a refused email is tried again (ALERT_RETRY_DELAY_MS; tests shorten it). */
  retryDelayMs?: number;
  /** ENDPOINT_ALERTS_PER_ORG_PER_HOUR: how many of an org's disables are mailed in any hour (alert-limit.ts). */
  perOrgPerHour: number;
}

/** The announcement's fields, or undefined for a body that is not one (acked unread rather than retried forever). */
function disabledEndpointOf(data: unknown): webhooks.EndpointDisabled | undefined {
  if (typeof data !== "object" || data === null) return undefined;
  const event = webhooks.EndpointDisabled.fromJSON(data);
  const named = (value: string) => value.length > 0 && value.length <= 200;
  if (!named(event.eventId) || !named(event.orgId) || !named(event.endpointId) || !Number.isFinite(event.disabledAt) || event.disabledAt <= 0) return undefined;
  return event;
}

/**
 * Emails an org's owners and admins (confirmed addresses) when the dispatcher disabled one of its endpoints, as Svix
 * and Stripe do: the `endpoint.disabled` webhook alone would go to the org's other endpoints, if it has any that
 * listen. Each recipient is mailed once per disable: `alert_emails` records a sent email before the message is acked,
 * so a redelivery (a crash, a lost ack, a mail server that refused one recipient) mails only those not mailed yet.
 * A crash between an email leaving and its row committing sends that one email again. At most `perOrgPerHour` of an
 * org's disables are mailed in any hour; the others are logged and shown on the dashboard only.
 */
export async function startEndpointAlerts({ bus, db, mailer, publicUrl, logger, retryDelayMs = ALERT_RETRY_DELAY_MS, perOrgPerHour }: EndpointAlertsOptions): Promise<ConsumerHandle> {
  return bus.consume<unknown>({
    stream: STREAMS.webhookEvents,
    durable: ENDPOINT_ALERTS_DURABLE,
    filterSubjects: [ENDPOINT_DISABLED_SUBJECT],
    concurrency: 2,
    maxDeliver: ALERT_MAX_DELIVER,
    retryDelayMs,
    handler: async (message) => {
      const event = disabledEndpointOf(message.data);
      if (!event) {
        logger?.warn({ subject: message.subject }, "endpoint.disabled announcement without its fields: ignored");
        return;
      }
      const org = await alertRecipients(db, event.orgId);
      if (!org) return;
      const admission = await admitAlert(db, { orgId: event.orgId, endpointId: event.endpointId, eventId: event.eventId }, perOrgPerHour);
      if (admission === "repeat") {
        logger?.info({ eventId: event.eventId, orgId: event.orgId, endpointId: event.endpointId }, "endpoint-disabled email not sent: this endpoint's disable was mailed less than an hour ago");
        return;
      }
      if (admission === "limited") {
        logger?.warn({ eventId: event.eventId, orgId: event.orgId, endpointId: event.endpointId, perOrgPerHour }, "endpoint-disabled email not sent: the org's hourly alert limit is reached");
        return;
      }
      const mailed = new Set(
        (await db.selectFrom("alert_emails").select("user_id").where("event_id", "=", event.eventId).execute()).map((row) => row.user_id),
      );
      for (const recipient of org.recipients) {
        if (mailed.has(recipient.userId)) continue;
        try {
          await mailer.send(endpointDisabledEmail(recipient.email, { ...event, orgName: org.orgName }, publicUrl));
        } catch (error) {
          const last = message.deliveryCount >= ALERT_MAX_DELIVER;
          logger?.[last ? "error" : "warn"]({ eventId: event.eventId, orgId: event.orgId, userId: recipient.userId, err: { message: (error as Error).message } }, last ? "endpoint-disabled email not sent: given up" : "endpoint-disabled email not sent: retried");
          throw error;
        }
        await db.insertInto("alert_emails").values({ event_id: event.eventId, user_id: recipient.userId, sent_at: Date.now() }).onConflict((c) => c.doNothing()).execute();
        // Each SMTP exchange may take up to 10 s: the ack deadline moves with the work.
        message.working();
      }
    },
  });
}
