import { AppError, conflict, notFound, planLimit, validationError } from "@renderbus/errors";
import { isId } from "@renderbus/ids";
import type { webhooks } from "@renderbus/contracts";
import { isManagerRole, type AsyncService, type AuthContext, type CallContext } from "@renderbus/rpc";
import type { SecretBox } from "@renderbus/secret-box";
import type { DispatcherDb } from "../deliveries/delivery.js";
import { defaultEndpointSettings, type EndpointDirectory, type EndpointRow } from "../endpoints/endpoint-directory.js";
import {
  checkEndpointFields,
  DEFAULT_ENDPOINT_ID,
  generateEndpointSecret,
  GRACE_SECONDS_MAX,
  type Ordering,
  type RetryScheduleName,
} from "../endpoints/endpoint-rules.js";
import { deleteEndpoint, endpointRow, endpointRows, insertEndpoint, recoverDeliveries, takeRecoverSlot, updateEndpoint, type EndpointChange } from "../endpoints/endpoint-store.js";
import type { WebhookTarget } from "../targets/webhook-targets.js";

export interface EndpointsRpcDeps {
  db: DispatcherDb;
  directory: EndpointDirectory;
  box: SecretBox;
  mode: string;
  /** Endpoints per org, the default one included. */
  maxEndpoints: number;
  recoverMax: number;
  recoverIntervalMs: number;
  /** Wakes the sender after a recover. */
  wake(): void;
}

type EndpointMethods = Pick<
  webhooks.WebhooksServer,
  "listEndpoints" | "createEndpoint" | "getEndpoint" | "updateEndpoint" | "deleteEndpoint" | "rotateEndpointSecret" | "recoverEndpoint"
>;

/** Endpoints are part of the org's webhook setup: owners and admins change them; any member may read them. */
function requireManager(auth: AuthContext): AuthContext {
  if (!isManagerRole(auth.role)) throw new AppError("FORBIDDEN", "Only owners and admins can configure webhooks");
  return auth;
}

/** A stored endpoint as the gRPC message (never its secret). */
/** How long back the endpoint list's success counts look (docs/webhooks.md, "Dashboard"). */
export const RECENT_OUTCOMES_MS = 24 * 60 * 60 * 1000;

/** Per endpoint of the org: its deliveries created in the last 24 hours that succeeded and that failed. */
async function recentOutcomes(db: DispatcherDb, orgId: string, now = Date.now()): Promise<Map<string, { succeeded: number; failed: number }>> {
  const rows = await db
    .selectFrom("deliveries")
    .select(({ fn }) => [
      "endpoint_id",
      fn.countAll<string>().filterWhere("status", "=", "succeeded").as("succeeded"),
      fn.countAll<string>().filterWhere("status", "=", "failed").as("failed"),
    ])
    .where("org_id", "=", orgId)
    .where("created_at", ">=", now - RECENT_OUTCOMES_MS)
    .where("status", "in", ["succeeded", "failed"])
    .groupBy("endpoint_id")
    .execute();
  return new Map(rows.map((row) => [row.endpoint_id, { succeeded: Number(row.succeeded), failed: Number(row.failed) }]));
}

export function toEndpointMessage(row: EndpointRow, url: string, secretSet: boolean): webhooks.Endpoint {
  return {
    id: row.id,
    url,
    description: row.description,
    events: row.events,
    enabled: row.enabled,
    disabledReason: row.disabled_reason ?? undefined,
    disabledAt: row.disabled_at ?? undefined,
    ordering: row.ordering,
    rateLimitPerSecond: row.rate_limit_per_second ?? undefined,
    retrySchedule: row.retry_schedule,
    secretSet,
    createdAt: row.created_at,
    previousSecretExpiresAt: row.previous_secret_expires_at !== null && row.previous_secret_expires_at > Date.now() ? row.previous_secret_expires_at : undefined,
  };
}

/** The `Webhooks` RPCs of /webhooks/endpoints (docs/webhooks.md, "Endpoints"). */
export function endpointsRpc(deps: EndpointsRpcDeps): AsyncService<EndpointMethods> {
  const { db, directory, box } = deps;

  /** The org's target, fresh (a user acting now sees the webhookUrl just saved); PLAN_LIMIT without webhooks. */
  const targetOf = async (orgId: string): Promise<WebhookTarget> => {
    const { target } = await directory.get(orgId, { fresh: true });
    if (!target.plan.webhooks) throw planLimit(`Webhooks are not included in the ${target.plan.name} plan; upgrade to starter or above`);
    return target;
  };

  /** The endpoint as users see it, or NOT_FOUND (the default one exists while the org has a webhookUrl). */
  const viewOf = async (orgId: string, endpointId: string, target: WebhookTarget): Promise<webhooks.Endpoint> => {
    if (endpointId === DEFAULT_ENDPOINT_ID) {
      if (!target.url) throw notFound("Endpoint");
      const row = (await endpointRow(db, orgId, endpointId)) ?? defaultEndpointSettings(orgId, 0);
      return toEndpointMessage(row, target.url, !!target.secret);
    }
    if (!isId("ep", endpointId)) throw notFound("Endpoint");
    const row = await endpointRow(db, orgId, endpointId);
    if (!row || row.url === null) throw notFound("Endpoint");
    return toEndpointMessage(row, row.url, row.secret_sealed !== null);
  };

  const changed = (orgId: string) => directory.forget(orgId);

  return {
    async listEndpoints(_request, context: CallContext) {
      const { orgId } = context.requireAuth();
      const target = await targetOf(orgId);
      const [rows, stats] = await Promise.all([endpointRows(db, orgId), recentOutcomes(db, orgId)]);
      const endpoints: webhooks.Endpoint[] = [];
      if (target.url) endpoints.push(toEndpointMessage(rows.find((row) => row.id === DEFAULT_ENDPOINT_ID) ?? defaultEndpointSettings(orgId, 0), target.url, !!target.secret));
      for (const row of rows) if (row.id !== DEFAULT_ENDPOINT_ID && row.url !== null) endpoints.push(toEndpointMessage(row, row.url, row.secret_sealed !== null));
      return { endpoints: endpoints.map((endpoint) => ({ ...endpoint, recent: stats.get(endpoint.id) ?? { succeeded: 0, failed: 0 } })) };
    },

    async createEndpoint(request, context) {
      const { orgId } = requireManager(context.requireAuth());
      const target = await targetOf(orgId);
      const problem = checkEndpointFields({ ...request, events: request.events }, deps.mode);
      if (problem) throw problem;
      const secret = request.secret ?? generateEndpointSecret();
      const row = await insertEndpoint(
        db,
        orgId,
        {
          url: request.url,
          description: request.description ?? "",
          events: request.events,
          enabled: request.enabled ?? true,
          ordering: (request.ordering ?? "none") as Ordering,
          rateLimitPerSecond: request.rateLimitPerSecond ?? null,
          retrySchedule: (request.retrySchedule ?? "seed") as RetryScheduleName,
          secret,
        },
        box,
        { max: deps.maxEndpoints, defaultCounts: !!target.url },
      );
      if (!row) throw conflict(`An organization has at most ${deps.maxEndpoints} webhook endpoints (the default one included)`);
      changed(orgId);
      return { endpoint: toEndpointMessage(row, request.url, true), secret };
    },

    async getEndpoint(request, context) {
      const { orgId } = context.requireAuth();
      return viewOf(orgId, request.endpointId, await targetOf(orgId));
    },

    async updateEndpoint(request, context) {
      const { orgId } = requireManager(context.requireAuth());
      const target = await targetOf(orgId);
      await viewOf(orgId, request.endpointId, target);
      if (request.endpointId === DEFAULT_ENDPOINT_ID && request.url !== undefined) throw validationError("url of ep_default is the org's webhookUrl (PATCH /orgs/{org_id})");
      if (request.rateLimitPerSecond !== undefined && request.clearRateLimit) throw validationError("rateLimitPerSecond cannot be set and cleared at once");
      const problem = checkEndpointFields({ ...request, events: request.setEvents ? request.events : undefined }, deps.mode);
      if (problem) throw problem;
      const change: EndpointChange = {
        ...(request.url !== undefined ? { url: request.url } : {}),
        ...(request.description !== undefined ? { description: request.description } : {}),
        ...(request.setEvents ? { events: request.events } : {}),
        // Enabling again clears the reason it was disabled for.
        ...(request.enabled !== undefined ? { enabled: request.enabled, disabled_reason: request.enabled ? null : "disabled by a user", disabled_at: request.enabled ? null : Date.now() } : {}),
        ...(request.ordering !== undefined ? { ordering: request.ordering as Ordering } : {}),
        ...(request.rateLimitPerSecond !== undefined ? { rate_limit_per_second: request.rateLimitPerSecond } : {}),
        ...(request.clearRateLimit ? { rate_limit_per_second: null } : {}),
        ...(request.retrySchedule !== undefined ? { retry_schedule: request.retrySchedule as RetryScheduleName } : {}),
      };
      const row = Object.keys(change).length === 0 ? await endpointRow(db, orgId, request.endpointId) : await updateEndpoint(db, orgId, request.endpointId, change);
      changed(orgId);
      return viewOfRow(row, request.endpointId, orgId, target);
    },

    async deleteEndpoint(request, context) {
      const { orgId } = requireManager(context.requireAuth());
      const target = await targetOf(orgId);
      if (request.endpointId !== DEFAULT_ENDPOINT_ID) await viewOf(orgId, request.endpointId, target);
      await deleteEndpoint(db, orgId, request.endpointId);
      changed(orgId);
      return {};
    },

    async rotateEndpointSecret(request, context) {
      const { orgId } = requireManager(context.requireAuth());
      const target = await targetOf(orgId);
      await viewOf(orgId, request.endpointId, target);
      const graceSeconds = request.graceSeconds;
      if (!Number.isInteger(graceSeconds) || graceSeconds < 0 || graceSeconds > GRACE_SECONDS_MAX) throw validationError(`graceSeconds must be an integer from 0 to ${GRACE_SECONDS_MAX}`);
      const problem = checkEndpointFields({ secret: request.secret }, deps.mode);
      if (problem) throw problem;
      const secret = request.secret ?? generateEndpointSecret();
      const now = Date.now();
      const current = request.endpointId === DEFAULT_ENDPOINT_ID ? target.secret : await currentSecret(orgId, request.endpointId);
      const keepPrevious = graceSeconds > 0 && current !== undefined;
      const change: EndpointChange = {
        // The default endpoint's new secret is stored with the org by the caller (the gateway), right after this.
        ...(request.endpointId === DEFAULT_ENDPOINT_ID ? {} : { secret_sealed: box.seal(secret, orgId) }),
        previous_secret_sealed: keepPrevious ? box.seal(current, orgId) : null,
        previous_secret_expires_at: keepPrevious ? now + graceSeconds * 1000 : null,
      };
      const row = await updateEndpoint(db, orgId, request.endpointId, change, now);
      changed(orgId);
      return { endpoint: await viewOfRow(row, request.endpointId, orgId, target), secret };
    },

    async recoverEndpoint(request, context) {
      const { orgId } = requireManager(context.requireAuth());
      const target = await targetOf(orgId);
      await viewOf(orgId, request.endpointId, target);
      const now = Date.now();
      const until = request.until ?? now;
      if (!Number.isSafeInteger(request.since) || request.since < 0) throw validationError("since must be a time in epoch milliseconds");
      if (!Number.isSafeInteger(until) || until <= request.since) throw validationError("until must be after since");
      const row = await endpointRow(db, orgId, request.endpointId);
      if (row && !row.enabled) throw conflict("The endpoint is disabled; enable it (PATCH) before recovering its deliveries");
      const slot = await takeRecoverSlot(db, orgId, request.endpointId, deps.recoverIntervalMs, now);
      if (!slot.taken) {
        throw new AppError("RATE_LIMITED", `One recover per endpoint every ${Math.ceil(deps.recoverIntervalMs / 1000)} s; try again later`, {
          retryAfterSeconds: Math.max(1, Math.ceil(slot.retryAfterMs / 1000)),
        });
      }
      const count = await recoverDeliveries(db, orgId, request.endpointId, { since: request.since, until, limit: deps.recoverMax, now });
      deps.wake();
      return { count };
    },
  };

  async function currentSecret(orgId: string, endpointId: string): Promise<string | undefined> {
    const row = await endpointRow(db, orgId, endpointId);
    return row?.secret_sealed ? box.open(row.secret_sealed, orgId) : undefined;
  }

  async function viewOfRow(row: EndpointRow | undefined, endpointId: string, orgId: string, target: WebhookTarget): Promise<webhooks.Endpoint> {
    if (!row) return viewOf(orgId, endpointId, target);
    if (endpointId === DEFAULT_ENDPOINT_ID) return toEndpointMessage(row, target.url ?? "", !!target.secret);
    return toEndpointMessage(row, row.url ?? "", row.secret_sealed !== null);
  }
}
