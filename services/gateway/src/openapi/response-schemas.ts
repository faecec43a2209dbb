/**
 * JSON Schemas of the `data` the main routes answer with: the shapes `present/present.ts` builds (SPEC sections 5a
 * and 6). Absent optional values are null, never missing. e2e/tracing.e2e.test.ts validates live responses
 * against them.
 */

const epochMs = { type: "integer", description: "Epoch milliseconds" } as const;
const epochMsOrNull = { type: ["integer", "null"], description: "Epoch milliseconds; null until reached" } as const;
const nullableString = { type: ["string", "null"] } as const;
const nullableInteger = { type: ["integer", "null"] } as const;
const object = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: "object",
  required: Object.keys(properties),
  properties,
  ...extra,
});

export const responseSchemas = {
  Job: object(
    {
      id: { type: "string", pattern: "^job_", examples: ["job_01JD3Z8X9K2M4N6P8R0T2V4W6Y"] },
      orgId: { type: "string", pattern: "^org_", examples: ["org_01JD3Z5QF0ZJ8K3M5N7P9R1T3V"] },
      batchId: nullableString,
      type: { type: "string", examples: ["thumbnail"] },
      status: { type: "string", enum: ["waiting", "dispatched", "running", "completed", "failed", "cancelled"] },
      inputs: { type: "object", additionalProperties: { type: "string" }, examples: [{ source: "https://media.example.com/clip.mp4" }] },
      params: { type: "object", examples: [{ timestamp: 1 }] },
      metadata: { type: "object", examples: [{ customerRef: "order-1234" }] },
      result: {
        oneOf: [
          { type: "null" },
          object({ url: { type: "string" }, metadata: object({ durationMs: nullableInteger, width: nullableInteger, height: nullableInteger, fileSize: nullableInteger }) }),
        ],
        description: "Set when completed",
      },
      cost: { oneOf: [{ type: "null" }, object({ credits: { type: "integer" }, breakdown: { type: "string" } })], description: "Set when completed" },
      error: { oneOf: [{ type: "null" }, object({ code: { type: "string" }, message: { type: "string" } })], description: "Set when failed" },
      timing: object({ createdAt: epochMs, dispatchedAt: epochMsOrNull, startedAt: epochMsOrNull, completedAt: epochMsOrNull }),
      webhookDeliveries: {
        type: "array",
        items: object({
          id: { type: "string", pattern: "^del_" },
          event: { type: "string" },
          status: { type: "string", enum: ["pending", "succeeded", "failed"] },
          attempts: { type: "integer" },
          lastAttemptAt: epochMsOrNull,
          nextAttemptAt: epochMsOrNull,
          lastResponseStatus: nullableInteger,
          lastError: nullableString,
        }),
      },
    },
    { description: "A job (SPEC section 5a): the same shape in REST, MCP and the dashboard" },
  ),
  Batch: object({
    id: { type: "string", pattern: "^batch_" },
    orgId: { type: "string" },
    jobCount: { type: "integer" },
    jobIds: { type: "array", items: { type: "string" } },
    status: { type: "string", enum: ["running", "completed"] },
    counts: object(Object.fromEntries(["waiting", "dispatched", "running", "completed", "failed", "cancelled"].map((status) => [status, { type: "integer" }]))),
    timing: object({ createdAt: epochMs, completedAt: epochMsOrNull }),
  }),
  SubmittedBatch: object({
    id: { type: "string", pattern: "^batch_" },
    jobCount: { type: "integer" },
    jobIds: { type: "array", items: { type: "string" } },
    status: { type: "string" },
  }),
  ApiKey: object({
    id: { type: "string", pattern: "^key_" },
    name: { type: "string" },
    start: { type: "string", description: "The first characters of the key, to recognise it" },
    createdAt: epochMs,
    lastUsedAt: epochMsOrNull,
    revokedAt: epochMsOrNull,
  }),
  CreatedApiKey: {
    allOf: [{ $ref: "#/components/schemas/ApiKey" }, object({ key: { type: "string", pattern: "^rb_", description: "The full key: shown in this response only" } })],
  },
  Org: object({
    id: { type: "string", pattern: "^org_" },
    name: { type: "string" },
    plan: { type: "string", enum: ["free", "starter", "pro", "scale"] },
    credits: { type: "integer", description: "Balance in credits (1 credit = $0.01)" },
    webhookUrl: nullableString,
    webhookSecretSet: { type: "boolean", description: "The secret itself is never returned" },
    createdAt: epochMs,
  }),
  Delivery: object({
    id: { type: "string", pattern: "^del_" },
    event: { type: "string" },
    jobId: nullableString,
    batchId: nullableString,
    status: { type: "string", enum: ["pending", "succeeded", "failed"] },
    attempts: { type: "integer" },
    url: { type: "string" },
    createdAt: epochMs,
    lastAttemptAt: epochMsOrNull,
    nextAttemptAt: epochMsOrNull,
    lastResponseStatus: nullableInteger,
    lastError: nullableString,
    attemptLog: {
      type: "array",
      items: object({
        attempt: { type: "integer" },
        startedAt: epochMs,
        responseStatus: nullableInteger,
        error: nullableString,
        latencyMs: { type: "integer" },
        responseExcerpt: nullableString,
      }),
    },
  }),
  Me: object({
    userId: { type: "string" },
    orgId: { type: "string", pattern: "^org_" },
    plan: { type: "string", enum: ["free", "starter", "pro", "scale"] },
    role: { ...nullableString, description: "The user's role in the org (owner, admin or member) when known" },
    credential: { ...nullableString, description: "How this request authenticated, e.g. api_key or session" },
  }),
  JobType: object({
    name: { type: "string", examples: ["transcode"] },
    description: { type: "string" },
    inputs: { type: "array", items: { type: "string" }, description: "Names of the inputs the job type reads, e.g. source" },
    paramsSchema: { type: "object", description: "JSON Schema of the job type's `params`" },
    plans: { type: "array", items: { type: "string" }, description: "Plans that may submit this type" },
    output: { type: "string", description: "What the job produces, e.g. video/mp4" },
    price: { type: "string", description: "How the cost in credits is computed" },
  }),
  Balance: object({
    orgId: { type: "string", pattern: "^org_" },
    credits: { type: "integer", description: "Available credits (1 credit = $0.01)" },
    reserved: { type: "integer", description: "Credits held by jobs in flight" },
    plan: { type: "string" },
    monthlyCredits: { ...nullableInteger, description: "The plan's monthly included credits" },
    renewsAt: { ...epochMsOrNull, description: "When the available balance is next topped up to monthlyCredits (epoch ms)" },
  }),
  UsageEntry: object({
    id: { type: "string" },
    kind: { type: "string", enum: ["grant", "reserve", "capture", "release"] },
    credits: { type: "integer" },
    jobId: nullableString,
    balanceAfter: { type: "integer" },
    description: { type: "string" },
    createdAt: epochMs,
  }),
  TestWebhookOutcome: object({
    succeeded: { type: "boolean", description: "The receiver answered 2xx within the timeout" },
    delivery: { oneOf: [{ type: "null" }, { $ref: "#/components/schemas/Delivery" }] },
  }),
} as const;

/** Operations whose `data` is an array of the schema below (with `nextCursor` when the route takes a cursor). */
export const LIST_OPERATIONS = new Set(["listJobs", "listBatches", "listApiKeys", "listWebhookDeliveries", "listJobTypes", "getUsage"]);

/** Which schema each operation's `data` has (the items' for list operations); openapi-document.test.ts requires one per route. */
export const responseDataOf: Record<string, keyof typeof responseSchemas> = {
  submitJob: "Job",
  getJob: "Job",
  cancelJob: "Job",
  waitForJob: "Job",
  listJobs: "Job",
  submitBatch: "SubmittedBatch",
  getBatch: "Batch",
  listBatches: "Batch",
  createApiKey: "CreatedApiKey",
  listApiKeys: "ApiKey",
  revokeApiKey: "ApiKey",
  getOrg: "Org",
  updateOrgWebhook: "Org",
  listWebhookDeliveries: "Delivery",
  retryWebhookDelivery: "Delivery",
  getMe: "Me",
  listJobTypes: "JobType",
  getJobTypeSchema: "JobType",
  getBalance: "Balance",
  getUsage: "UsageEntry",
  sendTestWebhook: "TestWebhookOutcome",
};
