import { z } from "zod";
import { cursorQuery } from "./schemas.js";
import { forbidden } from "@renderbus/errors";
import { isManagerRole } from "@renderbus/rpc";
import { defineRoute } from "../http/route.js";
import { list, one, page } from "./response-schemas.js";
import { presentApiKey, presentOrg } from "../present/present.js";

export const accountRoutes = [
  defineRoute({
    method: "GET",
    url: "/me",
    operationId: "getMe",
    mcpTool: false,
    summary: "The resolved auth context",
    description: "Returns {userId, orgId, plan} for the credential of this request.",
    tag: "account",
    errors: [],
    response: one("Me"),
    handler: async ({ auth }) => ({ data: { userId: auth.userId, orgId: auth.orgId, plan: auth.plan, role: auth.role ?? null, credential: auth.credential ?? null } }),
  }),
  defineRoute({
    method: "POST",
    url: "/api-keys",
    operationId: "createApiKey",
    summary: "Create an API key",
    description: "Creates an org-scoped key. The full key is in this response only; store it now.",
    tag: "api-keys",
    successStatus: 201,
    body: z.strictObject({ name: z.string().trim().min(1).max(100).describe("A name to recognise the key by (1-100 characters)") }),
    errors: ["VALIDATION_ERROR", "FORBIDDEN"],
    response: one("CreatedApiKey"),
    handler: async ({ body, auth }, deps) => {
      const created = await deps.auth.createApiKey({ name: body.name }, { auth });
      return { data: { ...presentApiKey(created.apiKey!), key: created.key } };
    },
  }),
  defineRoute({
    method: "GET",
    url: "/api-keys",
    operationId: "listApiKeys",
    summary: "List API keys",
    description: "The org's keys without their secrets: id, name, start, createdAt, lastUsedAt, revokedAt.",
    tag: "api-keys",
    errors: [],
    response: list("ApiKey"),
    handler: async ({ auth }, deps) => ({ data: (await deps.auth.listApiKeys({}, { auth })).apiKeys.map(presentApiKey) }),
  }),
  defineRoute({
    method: "DELETE",
    url: "/api-keys/:keyId",
    operationId: "revokeApiKey",
    summary: "Revoke an API key",
    description: "Revokes the key at once: the next request with it gets 401 on every gateway.",
    tag: "api-keys",
    params: z.strictObject({ keyId: z.string().min(1).max(100) }),
    errors: ["NOT_FOUND", "FORBIDDEN"],
    response: one("ApiKey"),
    handler: async ({ params, auth }, deps) => {
      const key = await deps.auth.revokeApiKey({ keyId: params.keyId }, { auth });
      // Marked in Redis before the answer: every replica refuses it from now on, even one that misses the message.
      await deps.credentials.revokeApiKey({ apiKeyId: key.id });
      // Other gateway replicas drop the key before this response leaves (flush waits for the server to take it).
      deps.bus.notify("gateway.notify.api_key.revoked", { apiKeyId: key.id });
      await deps.bus.nc.flush();
      // A replica that missed the message reads the mark on its next request once its last read is old enough.
      await deps.credentials.outlastMarksRecheck();
      return { data: presentApiKey(key) };
    },
  }),
  defineRoute({
    method: "GET",
    url: "/orgs/current",
    operationId: "getOrg",
    summary: "The caller's organization",
    description: "id, name, plan, credits balance, webhookUrl and webhookSecretSet (the secret is never returned), and the plan's limits as this deployment enforces them.",
    tag: "orgs",
    errors: [],
    response: one("Org"),
    handler: async ({ auth }, deps) => ({ data: presentOrg(await deps.auth.getOrg({}, { auth }), deps.plans) }),
  }),
  defineRoute({
    method: "PATCH",
    url: "/orgs/:orgId",
    operationId: "updateOrgWebhook",
    summary: "Configure the org's webhook",
    description:
      "Sets webhookUrl and webhookSecret (plans starter and above; HTTPS required in production). The first webhookUrl needs a webhookSecret with it (every delivery is signed); once one is stored, either may change alone.",
    tag: "orgs",
    params: z.strictObject({ orgId: z.string().min(1).max(100) }),
    body: z.strictObject({
      webhookUrl: z.url().max(2048).nullable().optional().describe("Where deliveries are POSTed (null removes it)"),
      webhookSecret: z.string().min(8).max(256).optional().describe("HMAC key of X-Renderbus-Signature"),
    }),
    // Replaces the URL and secret in place; the same values twice change nothing more.
    effects: { destructive: true, idempotent: true },
    errors: ["VALIDATION_ERROR", "PLAN_LIMIT", "FORBIDDEN", "NOT_FOUND"],
    response: one("Org"),
    handler: async ({ params, body, auth }, deps) => {
      if (!isManagerRole(auth.role)) throw forbidden("Only owners and admins can configure webhooks");
      const org = await deps.auth.updateOrgWebhook(
        {
          orgId: params.orgId,
          ...(body.webhookUrl !== undefined ? { webhookUrl: body.webhookUrl ?? "" } : {}),
          ...(body.webhookSecret !== undefined ? { webhookSecret: body.webhookSecret } : {}),
        },
        { auth },
      );
      return { data: presentOrg(org, deps.plans) };
    },
  }),
  defineRoute({
    method: "GET",
    url: "/billing/balance",
    operationId: "getBalance",
    summary: "Credit balance",
    description:
      "Available and reserved credits (1 credit = $0.01), the plan's monthly credits, and renewsAt: when the available balance is next topped up to them. awaitingEmailVerification: the org's free credits are held until its creator confirms their email address (the link sent at sign-up; POST /auth/send-verification-email sends another).",
    tag: "billing",
    errors: [],
    response: one("Balance"),
    handler: async ({ auth }, deps) => {
      const balance = await deps.billing.getBalance({}, { auth });
      return {
        data: {
          orgId: balance.orgId,
          credits: balance.credits,
          reserved: balance.reserved,
          plan: auth.plan,
          monthlyCredits: balance.monthlyCredits ?? null,
          renewsAt: balance.renewsAt ?? null,
          awaitingEmailVerification: balance.awaitingEmailVerification ?? false,
        },
      };
    },
  }),
  defineRoute({
    method: "GET",
    url: "/billing/usage",
    operationId: "getUsage",
    summary: "Usage ledger",
    description: "Ledger entries (grant, reserve, capture, release), newest first, cursor paginated.",
    tag: "billing",
    query: z.strictObject({
      ...cursorQuery,
    }),
    errors: ["VALIDATION_ERROR"],
    response: page("UsageEntry"),
    handler: async ({ query, auth }, deps) => {
      const usage = await deps.billing.listUsage({ limit: query.limit, ...(query.cursor ? { cursor: query.cursor } : {}) }, { auth });
      return {
        data: usage.entries.map((entry) => ({
          id: entry.id,
          kind: entry.kind,
          credits: entry.credits,
          jobId: entry.jobId ?? null,
          balanceAfter: entry.balanceAfter,
          description: entry.description,
          createdAt: entry.createdAt,
        })),
        nextCursor: usage.nextCursor ?? null,
      };
    },
  }),
];
