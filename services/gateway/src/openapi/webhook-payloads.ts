/**
 * The webhook payloads as JSON Schema, for the OpenAPI document's top-level `webhooks` (OpenAPI 3.1). Shapes follow
 * docs/webhooks.md and the dispatcher's `deliveries/payloads.ts`, which builds the exact bytes that are signed.
 */

const epochMs = { type: "integer", description: "Epoch milliseconds" } as const;
const epochMsOrNull = { type: ["integer", "null"], description: "Epoch milliseconds, null until reached" } as const;
const jobId = { type: "string", pattern: "^job_", examples: ["job_01JD3Z8X9K2M4N6P8R0T2V4W6Y"] } as const;

export const webhookPayloadSchemas = {
  JobRunningEvent: {
    type: "object",
    required: ["event", "jobId", "type", "timing"],
    properties: {
      event: { const: "job.running" },
      jobId,
      type: { type: "string", description: "The job type, e.g. transcode" },
      timing: { type: "object", required: ["createdAt", "startedAt"], properties: { createdAt: epochMs, startedAt: epochMs } },
    },
  },
  JobCompletedEvent: {
    type: "object",
    required: ["event", "jobId", "result", "cost", "timing"],
    properties: {
      event: { const: "job.completed" },
      jobId,
      result: {
        type: "object",
        required: ["url", "metadata"],
        properties: {
          url: { type: ["string", "null"], format: "uri", description: "Signed, expiring download URL of the output" },
          metadata: {
            type: "object",
            required: ["durationMs", "width", "height", "fileSize"],
            properties: {
              durationMs: { type: ["integer", "null"] },
              width: { type: ["integer", "null"] },
              height: { type: ["integer", "null"] },
              fileSize: { type: ["integer", "null"] },
            },
          },
        },
      },
      cost: {
        type: "object",
        required: ["credits", "breakdown"],
        properties: { credits: { type: "integer", minimum: 0 }, breakdown: { type: "string", examples: ["2m7s video @1080p"] } },
      },
      timing: { $ref: "#/components/schemas/JobTiming" },
    },
  },
  JobFailedEvent: {
    type: "object",
    required: ["event", "jobId", "error", "timing"],
    description: "No `cost` member: failed jobs are not charged.",
    properties: {
      event: { const: "job.failed" },
      jobId,
      error: {
        type: "object",
        required: ["code", "message"],
        properties: { code: { type: "string", enum: ["PROVIDER_ERROR", "PROVIDER_TIMEOUT", "INPUT_ERROR", "INSUFFICIENT_CREDITS"] }, message: { type: "string" } },
      },
      timing: { $ref: "#/components/schemas/JobTiming" },
    },
  },
  BatchCompletedEvent: {
    type: "object",
    required: ["event", "batchId", "jobCount", "counts", "timing"],
    properties: {
      event: { const: "batch.completed" },
      batchId: { type: "string", pattern: "^batch_" },
      jobCount: { type: "integer", minimum: 1 },
      counts: {
        type: "object",
        required: ["completed", "failed", "cancelled"],
        properties: { completed: { type: "integer" }, failed: { type: "integer" }, cancelled: { type: "integer" } },
      },
      timing: { type: "object", required: ["createdAt", "completedAt"], properties: { createdAt: epochMs, completedAt: epochMs } },
    },
  },
  WebhookTestEvent: {
    type: "object",
    required: ["event", "orgId", "message", "timing"],
    properties: {
      event: { const: "webhook.test" },
      orgId: { type: "string", pattern: "^org_" },
      message: { type: "string" },
      timing: { type: "object", required: ["createdAt"], properties: { createdAt: epochMs } },
    },
  },
  JobProgressEvent: {
    type: "object",
    required: ["event", "jobId", "orgId", "progress", "timing"],
    description: "Opt-in (an endpoint must name `job.progress`; `*` does not cover it), at most one per job and endpoint every 5 s, best-effort.",
    properties: {
      event: { const: "job.progress" },
      jobId,
      orgId: { type: "string", pattern: "^org_" },
      progress: {
        type: "object",
        required: ["percent", "etaMs", "updatedAt"],
        properties: {
          percent: { type: ["number", "null"], minimum: 0, maximum: 100, description: "Share of the expected output produced (one decimal); null when it cannot be known" },
          etaMs: { type: ["integer", "null"], minimum: 0, description: "Estimated time left in ms; null when unknown" },
          updatedAt: { ...epochMs, description: "When the worker read it (epoch ms)" },
        },
      },
      timing: {
        type: "object",
        required: ["createdAt", "startedAt"],
        description: "When the job was created and started; null only from a worker older than this field",
        properties: { createdAt: epochMsOrNull, startedAt: epochMsOrNull },
      },
    },
  },
  EndpointDisabledEvent: {
    type: "object",
    required: ["event", "endpointId", "url", "reason", "disabledAt"],
    description: "Sent to the org's other endpoints that name `endpoint.disabled` (`*` does not cover it) when an endpoint is disabled: its receiver answered 410 Gone, or all its deliveries failed for the auto-disable window (docs/webhooks.md, \"Auto-disable\").",
    properties: {
      event: { const: "endpoint.disabled" },
      endpointId: { type: "string", pattern: "^ep_" },
      url: { type: "string", description: "The disabled endpoint's URL" },
      reason: { type: "string", description: "Why it was disabled" },
      disabledAt: { ...epochMs, description: "When it was disabled (epoch ms)" },
    },
  },
  JobTiming: {
    type: "object",
    required: ["createdAt", "startedAt", "completedAt"],
    properties: { createdAt: epochMs, startedAt: epochMsOrNull, completedAt: epochMsOrNull },
  },
} as const;

/** Headers on every delivery (the brand `Renderbus` is configurable with WEBHOOK_HEADER_BRAND). */
const deliveryHeaders = [
  { name: "X-Renderbus-Signature", description: "`sha256=` + hex HMAC-SHA256 of the exact raw body bytes, keyed with the org's webhookSecret. Compare in constant time." },
  { name: "X-Renderbus-Event", description: "The event name, e.g. job.completed" },
  { name: "X-Renderbus-Delivery", description: "The delivery id (`del_...`), stable across attempts: dedupe on it" },
  { name: "X-Renderbus-Attempt", description: "1 for the first attempt, then 2, 3, 4 for the retries" },
  { name: "X-Renderbus-Timestamp", description: "When this attempt was signed, in Unix seconds: the same value as webhook-timestamp" },
  { name: "User-Agent", description: "Renderbus-Webhooks/<version>" },
  { name: "webhook-id", description: "Standard Webhooks: the delivery id (`del_...`), the same as X-Renderbus-Delivery" },
  { name: "webhook-timestamp", description: "Standard Webhooks: when this attempt was signed, in Unix seconds; reject it when more than 5 minutes off (replay protection)" },
  {
    name: "webhook-signature",
    description:
      'Standard Webhooks: `v1,<base64 HMAC-SHA256 of "{webhook-id}.{webhook-timestamp}.{body}">`; a `whsec_<base64>` secret is decoded for the HMAC, any other secret is used as its UTF-8 bytes. Verify with the `standardwebhooks` package or `verifyWebhook` from `@renderbus/sdk`.',
  },
].map(({ name, description }) => ({ name, in: "header", required: true, description, schema: { type: "string" } }));

const receiverResponses = {
  "2XX": { description: "Received. Any 2xx within 10 s counts as delivered." },
  default: { description: "Anything else (including 3xx and timeouts) is a failed attempt, retried 5 s, 25 s and 125 s later." },
};

const webhook = (event: string, schema: string, summary: string, description: string) => ({
  post: {
    operationId: `webhook_${event.replace(".", "_")}`,
    summary,
    description: `${description} Delivered at least once: receivers dedupe on X-Renderbus-Delivery. No ordering across events.`,
    tags: ["webhooks"],
    // Renderbus holds no credential of the receiver: the receiver authenticates the sender by X-Renderbus-Signature.
    security: [],
    parameters: deliveryHeaders,
    requestBody: { required: true, content: { "application/json": { schema: { $ref: `#/components/schemas/${schema}` } } } },
    responses: receiverResponses,
  },
});

/** The OpenAPI `webhooks` object: what Renderbus POSTs to an org's webhookUrl. */
export const webhookOperations = {
  "job.running": webhook("job.running", "JobRunningEvent", "A job's provider process started", "Sent when a job enters `running`."),
  "job.completed": webhook("job.completed", "JobCompletedEvent", "A job completed", "Sent once a job's output is stored and its cost captured."),
  "job.failed": webhook("job.failed", "JobFailedEvent", "A job failed", "Sent when a job fails (provider error, timeout, bad input or credits); no charge."),
  "batch.completed": webhook("batch.completed", "BatchCompletedEvent", "Every job of a batch is terminal", "Sent exactly once per batch, when its last job completes, fails or is cancelled."),
  "job.progress": webhook(
    "job.progress",
    "JobProgressEvent",
    "A running job's progress",
    "Sent only to endpoints that name `job.progress`, at most once per job every 5 s while it runs; best-effort (a reading may be skipped, and one may arrive after `job.completed`: use `progress.updatedAt`).",
  ),
  "endpoint.disabled": webhook(
    "endpoint.disabled",
    "EndpointDisabledEvent",
    "An endpoint was disabled",
    "Sent only to the org's other endpoints that name `endpoint.disabled`, once per disabling; re-enable the endpoint by updating it, then recover its window.",
  ),
  "webhook.test": webhook("webhook.test", "WebhookTestEvent", "A test event", "Sent by `POST /webhooks/test` to check a receiver and its signature verification."),
};
