import { forbidden, validationError } from "@renderbus/errors";
import type { auth } from "@renderbus/contracts";
import type { AsyncService } from "@renderbus/rpc";
import type { AuthResources } from "../auth-resources.js";
import { createApiKey, LastUsedRecorder, listApiKeys, resolveApiKey, revokeApiKey } from "../api-keys/api-keys.service.js";
import { requireManager } from "../orgs/membership.js";
import { orgView } from "../orgs/org-view.js";
import { updateOrgWebhook, webhookTarget } from "../orgs/org-webhook.js";
import { resolveSession } from "../sessions/resolve-session.js";
import { resolveAccessToken } from "../oauth/resolve-access-token.js";
import type { RenderbusAuth } from "../sessions/better-auth.js";

/**
 * The gRPC `Auth` service. Resolve* (the gateway) and GetWebhookTarget (the dispatcher only) are internal, with no
 * tenant; the rest act for the org in the caller's auth context, from the gateway's verified call token. Who may
 * call which method is checked before any handler runs (libs/rpc callers.ts).
 */
export function authRpc(store: AuthResources, betterAuth: RenderbusAuth, lastUsed: LastUsedRecorder): AsyncService<auth.AuthServer> {
  return {
    resolveApiKey: (request) => resolveApiKey(store, request.key, lastUsed),
    resolveSession: (request) => resolveSession(betterAuth, store, request.cookie),
    resolveAccessToken: (request) => resolveAccessToken(store, request.token, request.resource),
    async createApiKey(request, context) {
      const caller = context.requireAuth();
      // A key lives until revoked; an agent's OAuth grant must end when it is revoked or its user signs out, so the
      // grant cannot mint a credential that outlives it (security audit finding 10).
      if (caller.credential === "oauth") throw forbidden("An OAuth token cannot create API keys; create them from the dashboard or with an API key");
      await requireManager(store, caller);
      return createApiKey(store, caller.orgId, caller.userId, request.name);
    },
    async listApiKeys(_request, context) {
      const caller = context.requireAuth();
      return { apiKeys: await listApiKeys(store, caller.orgId) };
    },
    async revokeApiKey(request, context) {
      const caller = context.requireAuth();
      await requireManager(store, caller);
      return revokeApiKey(store, caller.orgId, request.keyId);
    },
    getOrg: (_request, context) => orgView(store, context.requireAuth().orgId),
    updateOrgWebhook: (request, context) => updateOrgWebhook(store, context.requireAuth(), request),
    async getWebhookTarget(request) {
      if (!request.orgId) throw validationError("orgId is required");
      return webhookTarget(store, request.orgId);
    },
  };
}
