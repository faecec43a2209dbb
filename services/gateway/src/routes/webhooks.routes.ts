import { z } from "zod";
import { cursorQuery } from "./schemas.js";
import { defineRoute } from "../http/route.js";
import { one, page } from "./response-schemas.js";
import { presentDelivery } from "../present/present.js";

export const webhookRoutes = [
  defineRoute({
    method: "GET",
    url: "/webhooks/deliveries",
    operationId: "listWebhookDeliveries",
    summary: "Webhook delivery log",
    description: "The org's deliveries with their attempts, newest first, filterable by status, event and jobId.",
    tag: "webhooks",
    query: z.strictObject({
      status: z.enum(["pending", "succeeded", "failed", "skipped"]).optional(),
      event: z.enum(["job.running", "job.completed", "job.failed", "batch.completed", "webhook.test", "endpoint.disabled", "job.progress"]).optional(),
      jobId: z.string().min(1).max(100).optional(),
      ...cursorQuery,
    }),
    errors: ["VALIDATION_ERROR"],
    response: page("Delivery"),
    handler: async ({ query, auth }, deps) => {
      const page = await deps.webhooks.listDeliveries(query, { auth });
      return { data: page.deliveries.map(presentDelivery), nextCursor: page.nextCursor ?? null };
    },
  }),
  defineRoute({
    method: "POST",
    url: "/webhooks/deliveries/:deliveryId/retry",
    operationId: "retryWebhookDelivery",
    summary: "Retry a delivery",
    description: "Sends a failed or succeeded delivery again, as a new attempt chain with the same delivery id.",
    tag: "webhooks",
    params: z.strictObject({ deliveryId: z.string().min(1).max(100) }),
    // Sends a request to the org's webhook URL.
    effects: { openWorld: true },
    errors: ["NOT_FOUND", "CONFLICT", "PLAN_LIMIT", "FORBIDDEN"],
    response: one("Delivery"),
    handler: async ({ params, auth }, deps) => ({
      data: presentDelivery(await deps.webhooks.retryDelivery({ deliveryId: params.deliveryId }, { auth })),
    }),
  }),
  defineRoute({
    method: "POST",
    url: "/webhooks/test",
    operationId: "sendTestWebhook",
    summary: "Send a test event",
    description: "Sends a signed webhook.test event to the org's webhookUrl, or to the given endpoint, and reports the outcome.",
    tag: "webhooks",
    // Sends a request to the org's webhook URL.
    effects: { openWorld: true },
    body: z
      .strictObject({
        endpointId: z.string().min(1).max(64).optional().describe("The endpoint to test (ep_...); the org's webhookUrl (ep_default) when left out"),
      })
      .optional(),
    errors: ["PLAN_LIMIT", "VALIDATION_ERROR", "FORBIDDEN", "NOT_FOUND"],
    response: one("TestWebhookOutcome"),
    handler: async ({ auth, body }, deps) => {
      const outcome = await deps.webhooks.sendTest(body?.endpointId !== undefined ? { endpointId: body.endpointId } : {}, { auth, deadlineMs: 30_000 });
      return { data: { succeeded: outcome.succeeded, delivery: outcome.delivery ? presentDelivery(outcome.delivery) : null } };
    },
  }),
];
