/**
 * JSON Schemas of the `data` the routes answer with: the shapes `present/present.ts` builds (docs/concepts.md). Absent
 * optional values are null, never missing. Each route names its own in `response` (one, list or page of these); in
 * tests the gateway checks every response it sends against them (http/response-check.ts).
 */
import { JOB_STATUSES } from "@renderbus/job-types";

const epochMs = { type: "integer", description: "Epoch milliseconds" } as const;
const epochMsOrNull = { type: ["integer", "null"], description: "Epoch milliseconds; null until reached" } as const;
const nullableString = { type: ["string", "null"] } as const;
const nullableInteger = { type: ["integer", "null"] } as const;
/** The events a delivery carries (docs/webhooks.md). */
const webhookEvent = { type: "string", enum: ["job.running", "job.completed", "job.failed", "batch.completed", "webhook.test", "endpoint.disabled", "job.progress"] } as const;
const object = (properties: Record<string, unknown>, extra: Record<string, unknown> = {}) => ({
  type: "object",
  required: Object.keys(properties),
  properties,
  ...extra,
});

/** A webhook endpoint (present/present.ts presentEndpoint). */
const ENDPOINT_PROPERTIES = {
    id: { type: "string", pattern: "^ep_", examples: ["ep_default"] },
    url: { type: "string" },
    description: { type: "string" },
    events: { type: "array", items: { type: "string" }, examples: [["*"], ["job.failed", "endpoint.disabled"]] },
    enabled: { type: "boolean" },
    disabledReason: nullableString,
    disabledAt: epochMsOrNull,
    ordering: { type: "string", enum: ["none", "fifo"] },
    rateLimitPerSecond: nullableInteger,
    retrySchedule: { type: "string", enum: ["seed", "extended"] },
    secretSet: { type: "boolean" },
    previousSecretExpiresAt: { ...epochMsOrNull, description: "Until when the secret before the last rotation still signs" },
    recentDeliveries: {
      type: ["object", "null"],
      required: ["succeeded", "failed"],
      properties: { succeeded: { type: "integer" }, failed: { type: "integer" } },
      description: "Its deliveries of the last 24 hours that succeeded and that failed; in the list only, null elsewhere",
    },
    createdAt: epochMs,
  };

export const responseSchemas = {
  Job: object(
    {
      id: { type: "string", pattern: "^job_", examples: ["job_01JD3Z8X9K2M4N6P8R0T2V4W6Y"] },
      orgId: { type: "string", pattern: "^org_", examples: ["org_01JD3Z5QF0ZJ8K3M5N7P9R1T3V"] },
      batchId: nullableString,
      type: { type: "string", examples: ["thumbnail"] },
      status: { type: "string", enum: [...JOB_STATUSES] },
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
      progress: {
        oneOf: [
          { type: "null" },
          object({
            percent: { type: ["number", "null"], minimum: 0, maximum: 100, description: "Percent of the expected output produced; null when it cannot be known" },
            etaMs: { type: ["integer", "null"], minimum: 0, description: "Estimated milliseconds left; null when unknown" },
            updatedAt: epochMs,
          }),
        ],
        description: "Live progress while running (updated at most every 500 ms, not stored), 100% once completed, null otherwise",
      },
      webhookDeliveries: {
        type: "array",
        items: object({
          id: { type: "string", pattern: "^del_" },
          event: webhookEvent,
          status: { type: "string", enum: ["pending", "succeeded", "failed", "skipped"] },
          attempts: { type: "integer" },
          lastAttemptAt: epochMsOrNull,
          nextAttemptAt: epochMsOrNull,
          lastResponseStatus: nullableInteger,
          lastError: nullableString,
        }),
      },
    },
    { description: "A job (docs/concepts.md): the same shape in REST, MCP and the dashboard" },
  ),
  Batch: object({
    id: { type: "string", pattern: "^batch_" },
    orgId: { type: "string" },
    jobCount: { type: "integer" },
    jobIds: { type: "array", items: { type: "string" } },
    status: { type: "string", enum: ["running", "completed"] },
    counts: object(Object.fromEntries(JOB_STATUSES.map((status) => [status, { type: "integer" }]))),
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
    limits: object({
      requestsPerMinute: { type: "integer", description: "API keys and OAuth tokens together, per minute" },
      concurrency: { type: "integer", description: "Jobs running at once" },
      maxBatchSize: { type: "integer" },
      maxQueuedJobs: { type: "integer", description: "Jobs waiting for a slot at most" },
      maxRunSeconds: { type: "integer" },
      maxInputBytes: { type: "integer" },
      monthlyCredits: { type: "integer" },
      webhooks: { type: "boolean" },
      jobTypes: { type: "string", enum: ["basic", "all"] },
    }),
  }),
  Delivery: object({
    id: { type: "string", pattern: "^del_" },
    event: webhookEvent,
    jobId: nullableString,
    batchId: nullableString,
    status: { type: "string", enum: ["pending", "succeeded", "failed", "skipped"], description: "skipped: created while its endpoint was disabled" },
    attempts: { type: "integer" },
    url: { type: "string" },
    endpointId: { type: "string", description: "The endpoint it goes to (ep_default: the org's webhookUrl)", examples: ["ep_default"] },
    createdAt: epochMs,
    lastAttemptAt: epochMsOrNull,
    nextAttemptAt: epochMsOrNull,
    lastResponseStatus: nullableInteger,
    lastError: nullableString,
    body: { type: "string", description: "The exact JSON body every attempt sends" },
    attemptLog: {
      type: "array",
      items: object({
        attempt: { type: "integer" },
        startedAt: epochMs,
        responseStatus: nullableInteger,
        error: nullableString,
        latencyMs: { type: "integer" },
        responseExcerpt: { ...nullableString, description: "The first 4 KB of the response body" },
        requestHeaders: {
          type: "object",
          additionalProperties: { type: "string" },
          description: "The headers sent, without the signature headers (X-Renderbus-Signature, webhook-signature)",
        },
        responseHeaders: { type: "object", additionalProperties: { type: "string" }, description: "The receiver's response headers (at most 50); empty without an answer" },
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
    awaitingEmailVerification: {
      type: "boolean",
      description: "The org's credits are held until its creator confirms their email address; they arrive at once when they do",
    },
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
  Endpoint: object(ENDPOINT_PROPERTIES),
  CreatedEndpoint: object({ ...ENDPOINT_PROPERTIES, secret: { type: "string", description: "The signing secret; shown only in this response" } }),
  DeletedEndpoint: object({ id: { type: "string", pattern: "^ep_" }, deleted: { type: "boolean" } }),
  RecoveredDeliveries: object({ count: { type: "integer", description: "Deliveries given a new attempt chain" } }),
  Upload: object(
    {
      id: { type: "string", pattern: "^upload_", examples: ["upload_01JD3ZC4D5E6F7G8H9J0K1M2N3"] },
      size: { ...nullableInteger, description: "Declared size in bytes; null while deferred (tus Upload-Defer-Length)" },
      offset: { type: "integer", description: "Bytes received so far: where an interrupted upload resumes" },
      complete: { type: "boolean", description: "All bytes received: usable as a job input" },
      createdAt: epochMs,
      expiresAt: { ...epochMs, description: "Epoch milliseconds; the upload is deleted then (24 h after creation by default)" },
    },
    { description: "A resumable upload (tus 1.0), usable as a job input by its id once complete (docs/uploads.md)" },
  ),
  UploadLink: object(
    {
      upload: { $ref: "#/components/schemas/Upload" },
      url: { type: "string", description: "Where to PATCH the file's bytes (tus 1.0)" },
      method: { type: "string", enum: ["PATCH"] },
      headers: { type: "object", additionalProperties: { type: "string" }, description: "Headers to send with the PATCH, besides your own Authorization" },
    },
    { description: "An empty upload and how to send its bytes (docs/uploads.md)" },
  ),
} as const;

export type ResponseSchemaName = keyof typeof responseSchemas;

/**
 * A route's success body, declared on the route itself (http/route.ts): `{data}` with one schema of
 * {@link responseSchemas}, `{data: [...]}` for a list, `{data: [...], nextCursor}` for a cursor-paginated list.
 * The OpenAPI document, the MCP tools' output schemas and the test-mode response check (http/response-check.ts) all
 * read it.
 */
export interface ResponseBody {
  data: ResponseSchemaName;
  shape: "one" | "list" | "page";
}

export const one = (data: ResponseSchemaName): ResponseBody => ({ data, shape: "one" });
export const list = (data: ResponseSchemaName): ResponseBody => ({ data, shape: "list" });
export const page = (data: ResponseSchemaName): ResponseBody => ({ data, shape: "page" });

/** Where the named schemas are referenced from: the OpenAPI document's components, or a standalone schema's `$defs`. */
export type SchemaRefBase = "#/components/schemas/" | "#/$defs/";

/** The JSON Schema of a success body, its named schemas referenced under `base`. */
export function responseBodySchema(response: ResponseBody, base: SchemaRefBase = "#/components/schemas/"): Record<string, unknown> {
  const item = { $ref: `${base}${response.data}` };
  if (response.shape === "one") return { type: "object", required: ["data"], properties: { data: item } };
  const data = { type: "array", items: item };
  if (response.shape === "list") return { type: "object", required: ["data"], properties: { data } };
  return {
    type: "object",
    required: ["data", "nextCursor"],
    properties: { data, nextCursor: { type: ["string", "null"], description: "Pass as `cursor` for the next page; null on the last page" } },
  };
}

/**
 * A self-contained JSON Schema (for MCP's `outputSchema`): `schema` with every named schema it reaches, directly or
 * through another, copied under `$defs`.
 */
export function standaloneSchema(schema: Record<string, unknown>, named: Record<string, unknown> = responseSchemas): Record<string, unknown> {
  const defs: Record<string, unknown> = {};
  const pending = [schema];
  const rebase = (value: unknown) => JSON.parse(JSON.stringify(value).replaceAll('"#/components/schemas/', '"#/$defs/')) as Record<string, unknown>;
  while (pending.length > 0) {
    for (const [, name] of JSON.stringify(pending.pop()).matchAll(/"#\/(?:components\/schemas|\$defs)\/(\w+)"/g)) {
      if (name! in defs) continue;
      if (!(name! in named)) throw new Error(`No schema named ${name}`);
      defs[name!] = rebase(named[name!]);
      pending.push(defs[name!] as Record<string, unknown>);
    }
  }
  return { ...rebase(schema), ...(Object.keys(defs).length > 0 ? { $defs: defs } : {}) };
}
