import type { Transaction } from "kysely";
import { enqueueOutbox } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import type { authEvents } from "@renderbus/contracts";
import type { AuthTables } from "../database.js";

/** Subjects of the events the auth service publishes (stream AUTH_EVENTS); gateways drop caches on them. */
export const AUTH_EVENT_SUBJECTS = {
  apiKeyRevoked: "auth.events.api_key.revoked",
  orgUpdated: "auth.events.org.updated",
} as const;

/** Queues `auth.events.api_key.revoked` in the caller's transaction; the outbox relay publishes it after commit. */
export async function enqueueApiKeyRevoked(trx: Transaction<AuthTables>, event: authEvents.ApiKeyRevoked): Promise<void> {
  await enqueueOutbox(trx, [
    {
      messageId: newId("evt"),
      subject: AUTH_EVENT_SUBJECTS.apiKeyRevoked,
      body: event,
      headers: { "Rb-Event-Type": "api_key.revoked", "Rb-Org-Id": event.orgId },
    },
  ]);
}

/** Queues `auth.events.org.updated` (plan or webhook target changed) in the caller's transaction. */
export async function enqueueOrgUpdated(trx: Transaction<AuthTables>, event: authEvents.OrgUpdated): Promise<void> {
  await enqueueOutbox(trx, [
    {
      messageId: newId("evt"),
      subject: AUTH_EVENT_SUBJECTS.orgUpdated,
      body: event,
      headers: { "Rb-Event-Type": "org.updated", "Rb-Org-Id": event.orgId },
    },
  ]);
}
