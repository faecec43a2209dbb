import { auth, jobs, webhooks } from "@renderbus/contracts";
import type { ServiceDefinition } from "@grpc/grpc-js";
import type { ServiceName } from "./service-keys.js";

/**
 * Who may call an RPC. `tenant`: the gateway acting for a user or API key (its token carries the org); the handler
 * reads that org from the call context. `services`: the listed services, with their own identity.
 */
export type CallerRule = { kind: "tenant" } | { kind: "services"; services: readonly ServiceName[] };

const tenant: CallerRule = { kind: "tenant" };
const services = (...names: ServiceName[]): CallerRule => ({ kind: "services", services: names });

type Rules<Definition> = { readonly [Method in keyof Definition]: CallerRule };

// One rule per method, typed against the generated definitions: a new RPC does not compile until it says who may
// call it. Keep in step with the clients (grep createRpcClient).
const AUTH_RULES: Rules<typeof auth.AuthService> = {
  // The gateway resolves credentials before it knows a tenant.
  resolveApiKey: services("gateway"),
  resolveSession: services("gateway"),
  resolveAccessToken: services("gateway"),
  createApiKey: tenant,
  listApiKeys: tenant,
  revokeApiKey: tenant,
  getOrg: tenant,
  updateOrgWebhook: tenant,
  // Returns the org's decrypted webhook secret: the dispatcher signs deliveries with it, nobody else may read it.
  getWebhookTarget: services("webhook-dispatcher"),
};

const BILLING_RULES: Rules<typeof auth.BillingService> = {
  getBalance: tenant,
  listUsage: tenant,
  // The jobs service's credit check at submission.
  checkBalance: services("jobs"),
  // The worker reserves a job's estimated credits before its provider starts.
  reserveCredits: services("worker"),
};

const JOBS_RULES: Rules<typeof jobs.JobsService> = {
  submitJob: tenant,
  getJob: tenant,
  listJobs: tenant,
  cancelJob: tenant,
  submitBatch: tenant,
  getBatch: tenant,
  listBatches: tenant,
  // The same for every caller (no tenant data); the gateway's own token or a tenant's will do.
  listJobTypes: services("gateway"),
  startJob: services("worker"),
  completeJob: services("worker"),
  failJob: services("worker"),
  holdJob: services("worker"),
};

const WEBHOOKS_RULES: Rules<typeof webhooks.WebhooksService> = {
  listDeliveries: tenant,
  retryDelivery: tenant,
  sendTest: tenant,
  listEndpoints: tenant,
  createEndpoint: tenant,
  getEndpoint: tenant,
  updateEndpoint: tenant,
  deleteEndpoint: tenant,
  rotateEndpointSecret: tenant,
  recoverEndpoint: tenant,
};

/** Each gRPC service, the process that serves it (a call token's `aud`), and its callers per method. */
export const RPC_SERVICES: readonly { definition: ServiceDefinition; audience: ServiceName; rules: Record<string, CallerRule> }[] = [
  { definition: auth.AuthService, audience: "auth", rules: AUTH_RULES },
  { definition: auth.BillingService, audience: "auth", rules: BILLING_RULES },
  { definition: jobs.JobsService, audience: "jobs", rules: JOBS_RULES },
  { definition: webhooks.WebhooksService, audience: "webhook-dispatcher", rules: WEBHOOKS_RULES },
];

const byPath = new Map<string, { audience: ServiceName; rule: CallerRule }>();
for (const { definition, audience, rules } of RPC_SERVICES) {
  for (const [method, spec] of Object.entries(definition)) {
    const rule = rules[method];
    if (rule) byPath.set(spec.path, { audience, rule });
  }
}

/** The rule and serving process of a method by its full path (`/renderbus.auth.v1.Auth/GetWebhookTarget`). */
export function rpcMethodOf(path: string): { audience: ServiceName; rule: CallerRule } | undefined {
  return byPath.get(path);
}

/** Whether `caller` (with or without a tenant in its token) may call a method with `rule`. */
export function isCallerAllowed(rule: CallerRule, caller: { service: ServiceName; auth: unknown }): boolean {
  if (rule.kind === "tenant") return caller.service === "gateway" && caller.auth !== undefined;
  return rule.services.includes(caller.service);
}
