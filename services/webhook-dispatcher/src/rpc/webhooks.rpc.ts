import { randomUUID } from "node:crypto";
import type { Kysely } from "kysely";
import { AppError, forbidden, notFound, planLimit, validationError } from "@renderbus/errors";
import { isId } from "@renderbus/ids";
import type { webhooks } from "@renderbus/contracts";
import { isManagerRole, type AsyncService, type AuthContext } from "@renderbus/rpc";
import type { DispatcherTables } from "../database.js";
import { attemptsOf, findDelivery, listDeliveries } from "../deliveries/delivery-queries.js";
import { insertDelivery } from "../deliveries/insert-deliveries.js";
import { restartDelivery } from "../deliveries/restart-delivery.js";
import { toDeliveryMessage } from "./delivery-message.js";
import { webhookTestPayload } from "@renderbus/webhook-payloads";
import type { DeliverySender } from "../sending/delivery-sender.js";
import type { WebhookTargets } from "../targets/webhook-targets.js";
import type { EndpointDirectory } from "../endpoints/endpoint-directory.js";
import { DEFAULT_ENDPOINT_ID } from "../endpoints/endpoint-rules.js";

export interface WebhooksRpcDeps {
  db: Kysely<DispatcherTables>;
  targets: WebhookTargets;
  /** Resolves a test's endpoint other than the default one. */
  endpoints: EndpointDirectory;
  sender: DeliverySender;
  /** Lease for the synchronous test attempt: above the attempt timeout. */
  leaseMs: number;
}

const STATUSES = new Set(["pending", "succeeded", "failed", "skipped"]);
const EVENTS = new Set(["job.running", "job.completed", "job.failed", "batch.completed", "webhook.test", "endpoint.disabled", "job.progress"]);

/** Manual retries and test events act on the org's webhook setup: owners and admins only, like changing it. */
function requireManager(auth: AuthContext): AuthContext {
  if (!isManagerRole(auth.role)) throw forbidden("Only owners and admins of the organization may do this");
  return auth;
}

/** The `Webhooks` gRPC service: the org's delivery log (any member), manual retries and test events (managers). */
export function webhooksRpc({ db, targets, endpoints, sender, leaseMs }: WebhooksRpcDeps): AsyncService<Pick<webhooks.WebhooksServer, "listDeliveries" | "retryDelivery" | "sendTest">> {
  return {
    async listDeliveries(request, context) {
      const { orgId } = context.requireAuth();
      if (request.status && !STATUSES.has(request.status)) throw validationError("status must be one of pending, succeeded, failed, skipped");
      if (request.event && !EVENTS.has(request.event)) throw validationError(`event must be one of ${[...EVENTS].join(", ")}`);
      if (request.cursor && !isId("del", request.cursor)) throw validationError("cursor is invalid");
      const limit = request.limit || 50;
      if (limit < 1 || limit > 100) throw validationError("limit must be between 1 and 100");
      const page = await listDeliveries(db, { orgId, status: request.status, event: request.event, jobId: request.jobId, limit, before: request.cursor });
      const deliveries = page.rows.map((row) => toDeliveryMessage(row, page.attempts.get(row.id)));
      const last = page.rows.at(-1);
      return { deliveries, ...(page.hasMore && last ? { nextCursor: last.id } : {}) };
    },

    async retryDelivery(request, context) {
      const { orgId } = requireManager(context.requireAuth());
      if (!isId("del", request.deliveryId)) throw notFound("Delivery");
      const restarted = await restartDelivery(db, orgId, request.deliveryId);
      if (!restarted) {
        const existing = await findDelivery(db, orgId, request.deliveryId);
        if (!existing) throw notFound("Delivery");
        throw new AppError("CONFLICT", "Delivery is still being attempted; retry it once it has succeeded or failed");
      }
      sender.wake();
      const attempts = await attemptsOf(db, [restarted.id]);
      return toDeliveryMessage(restarted, attempts.get(restarted.id));
    },

    async sendTest(request, context) {
      const { orgId } = requireManager(context.requireAuth());
      // Fresh: the user has usually just saved the URL and secret they want to test.
      const target = await targets.get(orgId, { fresh: true });
      if (!target.plan.webhooks) throw planLimit(`Webhooks are not included in the ${target.plan.name} plan`);
      const endpointId = request.endpointId ?? DEFAULT_ENDPOINT_ID;
      let url = target.url;
      if (endpointId !== DEFAULT_ENDPOINT_ID) {
        if (!isId("ep", endpointId)) throw notFound("Endpoint");
        const endpoint = (await endpoints.get(orgId, { fresh: true })).endpoints.find((candidate) => candidate.id === endpointId);
        if (!endpoint) throw notFound("Endpoint");
        if (!endpoint.enabled) throw validationError("The endpoint is disabled: enable it to send it a test event");
        url = endpoint.url;
      }
      if (!url) throw validationError("webhookUrl is not configured");
      const now = Date.now();
      const leaseToken = randomUUID();
      const row = await db.transaction().execute(async (trx) => {
        const inserted = await insertDelivery(
          trx,
          { orgId, event: "webhook.test", sourceEventId: null, jobId: null, batchId: null, url, body: JSON.stringify(webhookTestPayload(orgId, now)), eventAt: now, endpointId },
          { now, queued: false },
        );
        // Held by this call: the queue never picks a test delivery up (no retries for test events).
        return trx.updateTable("deliveries").set({ lease_until: now + leaseMs, lease_token: leaseToken }).where("id", "=", inserted!.id).returningAll().executeTakeFirstOrThrow();
      });
      const updated = (await sender.attempt(row, leaseToken, [])) ?? row;
      const attempts = await attemptsOf(db, [updated.id]);
      return { delivery: toDeliveryMessage(updated, attempts.get(updated.id)), succeeded: updated.status === "succeeded" };
    },
  };
}
