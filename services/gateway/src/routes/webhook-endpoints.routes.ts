import { z } from "zod";
import type { webhooks } from "@renderbus/contracts";
import { defineRoute } from "../http/route.js";
import { list, one } from "./response-schemas.js";
import type { GatewayDeps } from "../deps.js";
import type { AuthContext } from "@renderbus/rpc";
import { presentEndpoint } from "../present/present.js";

/** The org's webhookUrl as an endpoint: its URL and secret are the org's (auth service), its other settings the dispatcher's. */
const DEFAULT_ENDPOINT_ID = "ep_default";

const endpointEvents = z
  .array(z.enum(["*", "job.running", "job.completed", "job.failed", "batch.completed", "endpoint.disabled", "job.progress"]))
  .min(1)
  .max(6)
  .describe('Event names, or ["*"] for every job and batch event (endpoint.disabled and job.progress are only sent to endpoints naming them)');
const endpointSettings = {
  description: z.string().max(500).optional().describe("Your note about the endpoint"),
  events: endpointEvents.optional(),
  enabled: z.boolean().optional().describe("Disabled endpoints get no attempts; their deliveries are stored as skipped"),
  ordering: z.enum(["none", "fifo"]).optional().describe("fifo: one delivery in flight, in the order of the events"),
  retrySchedule: z.enum(["seed", "extended"]).optional().describe("seed: retries after 5 s, 25 s, 125 s; extended: then 10 min, 1 h, 6 h, 24 h"),
};
const endpointIdParams = z.strictObject({ endpointId: z.string().min(1).max(100).describe("An ep_ id, or ep_default") });
const secret = z.string().min(8).max(256).describe("Signing secret; whsec_<base64> keys webhook-signature with the decoded bytes");

/** Changes the default endpoint's URL where it lives: the org's webhookUrl (PATCH /orgs/{org_id} does the same). */
async function setDefaultEndpointTarget(deps: GatewayDeps, auth: AuthContext, change: { webhookUrl?: string; webhookSecret?: string }): Promise<void> {
  await deps.auth.updateOrgWebhook({ orgId: auth.orgId, ...change }, { auth });
}

const present = (endpoint: webhooks.Endpoint | undefined) => (endpoint ? presentEndpoint(endpoint) : null);

export const webhookEndpointRoutes = [
  defineRoute({
    method: "GET",
    url: "/webhooks/endpoints",
    operationId: "listWebhookEndpoints",
    response: list("Endpoint"),
    summary: "List webhook endpoints",
    description: "The org's endpoints, the default one (ep_default, the org's webhookUrl) first. Secrets are never returned.",
    tag: "webhooks",
    errors: ["PLAN_LIMIT"],
    handler: async ({ auth }, deps) => ({ data: (await deps.webhooks.listEndpoints({}, { auth })).endpoints.map(presentEndpoint) }),
  }),
  defineRoute({
    method: "POST",
    url: "/webhooks/endpoints",
    operationId: "createWebhookEndpoint",
    response: one("CreatedEndpoint"),
    summary: "Create a webhook endpoint",
    description:
      "Adds an endpoint (at most 20 per org, the default one included; plans starter and above). Without a secret one is generated (whsec_...). The secret is returned only in this response.",
    tag: "webhooks",
    successStatus: 201,
    body: z.strictObject({
      url: z.url().max(2048).describe("Where deliveries are POSTed"),
      ...endpointSettings,
      events: endpointEvents.default(["*"]),
      rateLimitPerSecond: z.number().int().min(1).max(10_000).optional().describe("Most deliveries per second to this endpoint"),
      secret: secret.optional(),
    }),
    errors: ["VALIDATION_ERROR", "PLAN_LIMIT", "FORBIDDEN", "CONFLICT"],
    handler: async ({ body, auth }, deps) => {
      const created = await deps.webhooks.createEndpoint(body, { auth });
      return { data: { ...present(created.endpoint), secret: created.secret } };
    },
  }),
  defineRoute({
    method: "GET",
    url: "/webhooks/endpoints/:endpointId",
    operationId: "getWebhookEndpoint",
    response: one("Endpoint"),
    summary: "Get a webhook endpoint",
    description: "One endpoint, with its state (enabled, disabledReason); never its secret.",
    tag: "webhooks",
    params: endpointIdParams,
    errors: ["NOT_FOUND", "PLAN_LIMIT"],
    handler: async ({ params, auth }, deps) => ({ data: present(await deps.webhooks.getEndpoint({ endpointId: params.endpointId }, { auth })) }),
  }),
  defineRoute({
    method: "PATCH",
    url: "/webhooks/endpoints/:endpointId",
    operationId: "updateWebhookEndpoint",
    response: one("Endpoint"),
    summary: "Update a webhook endpoint",
    description:
      "Changes the given fields; `enabled: true` re-enables a disabled endpoint. For ep_default the url is the org's webhookUrl (the same as PATCH /orgs/{org_id}).",
    tag: "webhooks",
    params: endpointIdParams,
    body: z.strictObject({
      url: z.url().max(2048).optional(),
      ...endpointSettings,
      rateLimitPerSecond: z.number().int().min(1).max(10_000).nullable().optional().describe("null removes the limit"),
    }),
    errors: ["VALIDATION_ERROR", "PLAN_LIMIT", "FORBIDDEN", "NOT_FOUND"],
    handler: async ({ params, body, auth }, deps) => {
      const { url, events, rateLimitPerSecond, ...rest } = body;
      let endpointUrl = url;
      if (params.endpointId === DEFAULT_ENDPOINT_ID && url !== undefined) {
        // Checked (plan, role, URL rules) and stored by the org's owner, the auth service.
        await deps.webhooks.getEndpoint({ endpointId: DEFAULT_ENDPOINT_ID }, { auth });
        await setDefaultEndpointTarget(deps, auth, { webhookUrl: url });
        endpointUrl = undefined;
      }
      const updated = await deps.webhooks.updateEndpoint(
        {
          endpointId: params.endpointId,
          ...rest,
          ...(endpointUrl !== undefined ? { url: endpointUrl } : {}),
          events: events ?? [],
          setEvents: events !== undefined,
          ...(rateLimitPerSecond !== undefined && rateLimitPerSecond !== null ? { rateLimitPerSecond } : {}),
          clearRateLimit: rateLimitPerSecond === null,
        },
        { auth },
      );
      return { data: present(updated) };
    },
  }),
  defineRoute({
    method: "DELETE",
    url: "/webhooks/endpoints/:endpointId",
    operationId: "deleteWebhookEndpoint",
    response: one("DeletedEndpoint"),
    summary: "Delete a webhook endpoint",
    description: "Removes the endpoint; its pending deliveries are skipped. Deleting ep_default removes the org's webhookUrl and secret.",
    tag: "webhooks",
    params: endpointIdParams,
    errors: ["PLAN_LIMIT", "FORBIDDEN", "NOT_FOUND"],
    handler: async ({ params, auth }, deps) => {
      if (params.endpointId === DEFAULT_ENDPOINT_ID) await deps.webhooks.getEndpoint({ endpointId: DEFAULT_ENDPOINT_ID }, { auth });
      await deps.webhooks.deleteEndpoint({ endpointId: params.endpointId }, { auth });
      if (params.endpointId === DEFAULT_ENDPOINT_ID) await setDefaultEndpointTarget(deps, auth, { webhookUrl: "" });
      return { data: { id: params.endpointId, deleted: true } };
    },
  }),
  defineRoute({
    method: "POST",
    url: "/webhooks/endpoints/:endpointId/rotate-secret",
    operationId: "rotateWebhookEndpointSecret",
    response: one("CreatedEndpoint"),
    summary: "Rotate an endpoint's secret",
    description:
      "Replaces the signing secret (given, or generated); the new one is returned only here. For graceSeconds (default 86400) webhook-signature carries a signature with each secret; X-Renderbus-Signature uses the new one.",
    tag: "webhooks",
    params: endpointIdParams,
    body: z
      .strictObject({
        secret: secret.optional(),
        graceSeconds: z.number().int().min(0).max(604_800).optional().describe("How long the old secret keeps signing (default 86400)"),
      })
      .optional(),
    errors: ["VALIDATION_ERROR", "PLAN_LIMIT", "FORBIDDEN", "NOT_FOUND"],
    handler: async ({ params, body, auth }, deps) => {
      const rotated = await deps.webhooks.rotateEndpointSecret(
        { endpointId: params.endpointId, ...(body?.secret !== undefined ? { secret: body.secret } : {}), graceSeconds: body?.graceSeconds ?? 86_400 },
        { auth },
      );
      // The default endpoint's secret is the org's: the dispatcher kept the old one for the grace period, the org now stores the new one.
      if (params.endpointId === DEFAULT_ENDPOINT_ID) await setDefaultEndpointTarget(deps, auth, { webhookSecret: rotated.secret });
      return { data: { ...present(rotated.endpoint), secret: rotated.secret } };
    },
  }),
  defineRoute({
    method: "POST",
    url: "/webhooks/endpoints/:endpointId/recover",
    operationId: "recoverWebhookEndpoint",
    response: one("RecoveredDeliveries"),
    summary: "Recover an endpoint's failed deliveries",
    description:
      "Every failed or skipped delivery of the endpoint created in [since, until) gets a new attempt chain (at most 10,000 per call, one call per endpoint per minute). Returns how many.",
    tag: "webhooks",
    params: endpointIdParams,
    body: z.strictObject({
      since: z.number().int().min(0).describe("Epoch milliseconds"),
      until: z.number().int().min(0).optional().describe("Epoch milliseconds; now when left out"),
    }),
    errors: ["VALIDATION_ERROR", "PLAN_LIMIT", "FORBIDDEN", "NOT_FOUND", "CONFLICT"],
    handler: async ({ params, body, auth }, deps) => ({
      data: await deps.webhooks.recoverEndpoint({ endpointId: params.endpointId, since: body.since, ...(body.until !== undefined ? { until: body.until } : {}) }, { auth }),
    }),
  }),
];
