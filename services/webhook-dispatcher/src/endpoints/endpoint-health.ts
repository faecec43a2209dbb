import type { webhooks } from "@renderbus/contracts";
import { enqueueOutbox } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import type { Logger } from "@renderbus/telemetry";
import type { DispatcherDb } from "../deliveries/delivery.js";
import { insertDeliveries } from "../deliveries/insert-deliveries.js";
import { endpointsFor, type EndpointDirectory } from "./endpoint-directory.js";
import { disableEndpoint, failingForWindow } from "./endpoint-store.js";

/** Where the dispatcher announces an endpoint it disabled by itself (the auth service emails the org's admins). */
export const ENDPOINT_DISABLED_SUBJECT = "webhooks.events.endpoint.disabled";

/** The `endpoint.disabled` payload (docs/webhooks.md, "Auto-disable"). */
export interface EndpointDisabledPayload {
  event: "endpoint.disabled";
  endpointId: string;
  url: string;
  reason: string;
  disabledAt: number;
}

export interface EndpointHealth {
  /** The receiver answered 410 Gone: the endpoint is disabled at once. */
  gone(orgId: string, endpointId: string): Promise<void>;
  /** A delivery to the endpoint failed for good: disables it when all its deliveries have failed for the window. */
  failedForGood(orgId: string, endpointId: string): Promise<void>;
}

export interface EndpointHealthOptions {
  db: DispatcherDb;
  endpoints: EndpointDirectory;
  logger: Logger;
  /** WEBHOOK_DISABLE_AFTER, in ms */
  windowMs: number;
  /** WEBHOOK_DISABLE_MIN_FAILURES */
  minFailures: number;
  /** Wakes the sender for the `endpoint.disabled` deliveries. */
  wake(): void;
}

/**
 * Disables dead endpoints, tells the org's other endpoints that subscribe to `endpoint.disabled` and announces it on
 * the bus ({@link ENDPOINT_DISABLED_SUBJECT}: the org's admins are emailed). Exactly one replica disables an endpoint
 * (the update only matches an enabled one), and only it announces the change.
 */
export function createEndpointHealth({ db, endpoints, logger, windowMs, minFailures, wake }: EndpointHealthOptions): EndpointHealth {
  // The window query reads the endpoint's deliveries since its last success: a dead endpoint with heavy traffic fails
  // many deliveries a minute, so each replica checks one endpoint at most once per interval (a window is hours long).
  const checkIntervalMs = Math.min(60_000, windowMs);
  const lastChecked = new Map<string, number>();
  const disable = async (orgId: string, endpointId: string, reason: string): Promise<void> => {
    const before = await endpoints.get(orgId);
    const url = before.endpoints.find((endpoint) => endpoint.id === endpointId)?.url ?? "";
    const others = endpointsFor(before, "endpoint.disabled").filter((endpoint) => endpoint.id !== endpointId);
    // The disable, its announcement and the other endpoints' deliveries commit together: a crash cannot disable an
    // endpoint without telling the org.
    const created = await db.transaction().execute(async (trx) => {
      const row = await disableEndpoint(trx, orgId, endpointId, reason);
      if (!row) return undefined;
      const disabledAt = row.disabled_at ?? Date.now();
      const eventId = newId("evt");
      const announcement: webhooks.EndpointDisabled = { eventId, orgId, endpointId, url, reason, disabledAt };
      await enqueueOutbox(trx, [{ messageId: eventId, subject: ENDPOINT_DISABLED_SUBJECT, body: announcement, headers: { "Rb-Event-Type": "endpoint.disabled", "Rb-Org-Id": orgId } }]);
      const payload: EndpointDisabledPayload = { event: "endpoint.disabled", endpointId, url, reason, disabledAt };
      const body = JSON.stringify(payload);
      return insertDeliveries(
        trx,
        others.map((endpoint) => ({
          orgId,
          event: "endpoint.disabled",
          sourceEventId: `endpoint.disabled:${endpointId}:${disabledAt}`,
          jobId: null,
          batchId: null,
          url: endpoint.url,
          body,
          eventAt: disabledAt,
          endpointId: endpoint.id,
          skipped: !endpoint.enabled,
          ordered: endpoint.ordering === "fifo",
        })),
      );
    });
    endpoints.forget(orgId);
    if (!created) return;
    logger.warn({ orgId, endpointId, reason }, "webhook endpoint disabled");
    if (created.length > 0) wake();
  };
  return {
    gone: (orgId, endpointId) => disable(orgId, endpointId, "the receiver answered 410 Gone"),
    async failedForGood(orgId, endpointId) {
      const key = `${orgId}/${endpointId}`;
      const now = Date.now();
      if ((lastChecked.get(key) ?? -Infinity) > now - checkIntervalMs) return;
      lastChecked.set(key, now);
      if (lastChecked.size > 10_000) lastChecked.delete(lastChecked.keys().next().value as string);
      if (await failingForWindow(db, orgId, endpointId, { windowMs, minFailures, now })) {
        await disable(orgId, endpointId, `every delivery failed for ${Math.round(windowMs / 60_000)} min (at least ${minFailures} deliveries)`);
      }
    },
  };
}
