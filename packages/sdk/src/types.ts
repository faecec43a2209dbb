/** Public JSON shapes of the Renderbus REST API (docs/concepts.md, docs/webhooks.md). Timestamps are epoch milliseconds. */

/** Job statuses in lifecycle order; the CLI and the dashboard take the list from here. */
export const JOB_STATUSES = ["waiting", "dispatched", "running", "completed", "failed", "cancelled"] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];
export const TERMINAL_STATUSES: readonly JobStatus[] = ["completed", "failed", "cancelled"];

export interface JobSpec {
  /** Job type, see `client.jobTypes.list()`. */
  type: string;
  /** Input URLs by name, e.g. `{ source: "https://..." }`. */
  inputs?: Record<string, string>;
  /** Type-specific parameters (JSON Schema in the job type). */
  params?: Record<string, unknown>;
  /** Your own data, returned with the job. */
  metadata?: Record<string, unknown>;
}

export interface JobResult {
  url: string;
  metadata: { durationMs: number | null; width: number | null; height: number | null; fileSize: number | null };
}

export interface JobWebhookDelivery {
  id: string;
  event: WebhookEventName;
  status: DeliveryStatus;
  attempts: number;
  lastAttemptAt: number | null;
  nextAttemptAt: number | null;
  lastResponseStatus: number | null;
  lastError: string | null;
}

/** A running job's live progress (docs/concepts.md, "Progress"): updated at most every 500 ms; 100% once completed. */
export interface JobProgress {
  /** Percent of the expected output produced, 0-100; null when it cannot be known (images, unknown source length). */
  percent: number | null;
  /** Estimated milliseconds left; null when unknown. */
  etaMs: number | null;
  /** Epoch ms of the reading. */
  updatedAt: number;
}

export interface Job {
  id: string;
  orgId: string;
  batchId: string | null;
  type: string;
  status: JobStatus;
  inputs: Record<string, string>;
  params: Record<string, unknown>;
  metadata: Record<string, unknown>;
  result: JobResult | null;
  cost: { credits: number; breakdown: string } | null;
  error: { code: string; message: string } | null;
  timing: { createdAt: number; dispatchedAt: number | null; startedAt: number | null; completedAt: number | null };
  /** Live progress while running, 100% once completed, null otherwise. */
  progress: JobProgress | null;
  webhookDeliveries: JobWebhookDelivery[];
}

export interface ListJobsParams {
  status?: JobStatus;
  type?: string;
  batchId?: string;
  createdAfter?: number;
  createdBefore?: number;
  /** Page size, 1-100 (default 50). Iteration continues over every page. */
  limit?: number;
  cursor?: string;
}

export interface SubmittedBatch {
  id: string;
  jobCount: number;
  jobIds: string[];
  status: string;
}

export interface ListUploadsParams {
  /** Page size, 1-100 (default 50). Iteration continues over every page. */
  limit?: number;
  cursor?: string;
}

export interface ListBatchesParams {
  status?: "running" | "completed";
  /** Page size, 1-100 (default 50). Iteration continues over every page. */
  limit?: number;
  cursor?: string;
}

export interface Batch {
  id: string;
  orgId: string;
  jobCount: number;
  jobIds: string[];
  status: "running" | "completed";
  counts: Record<JobStatus, number>;
  timing: { createdAt: number; completedAt: number | null };
}

/** A resumable upload (tus 1.0); use its id as a job input (`inputs.source`) once complete. */
export interface Upload {
  id: string;
  /** Declared size in bytes; null while deferred. */
  size: number | null;
  /** Bytes received so far. */
  offset: number;
  complete: boolean;
  createdAt: number;
  /** The upload is deleted then (24 h after creation by default). */
  expiresAt: number;
}

/** An empty upload and how to send its bytes: PATCH `url` with `headers` and your own Authorization. */
export interface UploadLink {
  upload: Upload;
  url: string;
  method: "PATCH";
  headers: Record<string, string>;
}

export interface JobType {
  name: string;
  description: string;
  /** Names of the inputs the type reads, e.g. `source`. */
  inputs: string[];
  /** JSON Schema of the type's `params`. */
  paramsSchema: Record<string, unknown>;
  /** Plans that may submit this type. */
  plans: string[];
  /** What a job produces, e.g. `video/mp4`. */
  output: string;
  /** How the cost in credits is computed. */
  price: string;
}

/** The plans an org can be on (docs/concepts.md). */
export type Plan = "free" | "starter" | "pro" | "scale";

export interface ApiKey {
  id: string;
  name: string;
  start: string;
  createdAt: number;
  lastUsedAt: number | null;
  revokedAt: number | null;
}

/** Returned once by `apiKeys.create`: `key` is the full secret and is never shown again. */
export interface CreatedApiKey extends ApiKey {
  key: string;
}

export interface Org {
  id: string;
  name: string;
  plan: Plan;
  credits: number;
  webhookUrl: string | null;
  webhookSecretSet: boolean;
  createdAt: number;
  /** The plan's limits as this deployment enforces them (self-hosters may override the defaults). */
  limits: {
    requestsPerMinute: number;
    concurrency: number;
    maxBatchSize: number;
    maxQueuedJobs: number;
    maxRunSeconds: number;
    maxInputBytes: number;
    monthlyCredits: number;
    webhooks: boolean;
    jobTypes: "basic" | "all";
  };
}

export interface UpdateOrgWebhookParams {
  /** Where deliveries are POSTed; null removes it. */
  webhookUrl?: string | null;
  /** HMAC key of the signature header (8-256 characters). */
  webhookSecret?: string;
}

export interface Balance {
  orgId: string;
  credits: number;
  reserved: number;
  plan: string;
  /** The plan's monthly included credits. */
  monthlyCredits: number | null;
  /** When the available balance is next topped up to `monthlyCredits` (epoch ms). */
  renewsAt: number | null;
  /**
   * The org's credits are held until its creator confirms their email address (the link sent at sign-up); they
   * arrive at once when they do.
   */
  awaitingEmailVerification: boolean;
}

export interface UsageEntry {
  id: string;
  kind: "grant" | "reserve" | "capture" | "release";
  credits: number;
  jobId: string | null;
  balanceAfter: number;
  description: string;
  createdAt: number;
}

export interface Me {
  userId: string;
  orgId: string;
  plan: Plan;
  role: string | null;
  credential: string | null;
}

export type DeliveryStatus = "pending" | "succeeded" | "failed" | "skipped";
export type WebhookEventName = "job.running" | "job.completed" | "job.failed" | "batch.completed" | "webhook.test" | "endpoint.disabled" | "job.progress";

export interface DeliveryAttempt {
  attempt: number;
  startedAt: number;
  responseStatus: number | null;
  error: string | null;
  latencyMs: number;
  /** The first 4 KB of the response body. */
  responseExcerpt: string | null;
  /** The headers sent, without the signature headers. */
  requestHeaders: Record<string, string>;
  /** The receiver's response headers; empty without an answer. */
  responseHeaders: Record<string, string>;
}

export interface Delivery {
  id: string;
  event: WebhookEventName;
  jobId: string | null;
  batchId: string | null;
  status: DeliveryStatus;
  attempts: number;
  url: string;
  /** The endpoint it goes to: `ep_default` is the org's webhookUrl. */
  endpointId: string;
  createdAt: number;
  lastAttemptAt: number | null;
  nextAttemptAt: number | null;
  lastResponseStatus: number | null;
  lastError: string | null;
  /** The exact JSON body every attempt sends. */
  body: string;
  attemptLog: DeliveryAttempt[];
}

/** A webhook endpoint (docs/webhooks.md, "Endpoints"); its secret is only in CreatedEndpoint. */
export interface Endpoint {
  id: string;
  url: string;
  description: string;
  /** Event names, or `["*"]`. */
  events: string[];
  enabled: boolean;
  disabledReason: string | null;
  disabledAt: number | null;
  ordering: "none" | "fifo";
  rateLimitPerSecond: number | null;
  retrySchedule: "seed" | "extended";
  secretSet: boolean;
  previousSecretExpiresAt: number | null;
  /** Its deliveries of the last 24 hours that succeeded and that failed (in the list only; null elsewhere). */
  recentDeliveries: { succeeded: number; failed: number } | null;
  createdAt: number;
}

/** An endpoint as created or after a rotation: `secret` is shown only here. */
export interface CreatedEndpoint extends Endpoint {
  secret: string;
}

export interface EndpointSettings {
  description?: string;
  events?: string[];
  enabled?: boolean;
  ordering?: "none" | "fifo";
  retrySchedule?: "seed" | "extended";
}

export interface CreateEndpointParams extends EndpointSettings {
  url: string;
  rateLimitPerSecond?: number;
  secret?: string;
}

export interface UpdateEndpointParams extends EndpointSettings {
  url?: string;
  /** null removes the limit. */
  rateLimitPerSecond?: number | null;
}

export interface ListDeliveriesParams {
  status?: DeliveryStatus;
  event?: WebhookEventName;
  jobId?: string;
  limit?: number;
  cursor?: string;
}

export interface TestWebhookOutcome {
  succeeded: boolean;
  delivery: Delivery | null;
}

/** A webhook payload as `webhooks listen` receives it from `GET /webhooks/events/stream`. */
export interface StreamedWebhook {
  /** Stable per event (`job.completed:job_...`), or the delivery id of a test event. */
  id: string;
  event: WebhookEventName;
  /** The exact JSON text a delivery POSTs (sign and forward these bytes unchanged). */
  body: string;
}

/** Webhook payloads (docs/webhooks.md). */
export type WebhookPayload =
  | { event: "job.running"; jobId: string; type: string; timing: { createdAt: number; startedAt: number } }
  | {
      event: "job.completed";
      jobId: string;
      /** `url` is null only when the output could not be linked; fetch the job for a fresh link. */
      result: { url: string | null; metadata: JobResult["metadata"] };
      cost: { credits: number; breakdown: string };
      timing: { createdAt: number; startedAt: number | null; completedAt: number | null };
    }
  | {
      event: "job.failed";
      jobId: string;
      error: { code: "PROVIDER_ERROR" | "PROVIDER_TIMEOUT" | "INPUT_ERROR" | "INSUFFICIENT_CREDITS"; message: string };
      timing: { createdAt: number; startedAt: number | null; completedAt: number | null };
    }
  | {
      event: "batch.completed";
      batchId: string;
      jobCount: number;
      counts: { completed: number; failed: number; cancelled: number };
      timing: { createdAt: number; completedAt: number };
    }
  | { event: "webhook.test"; orgId: string; message: string; timing: { createdAt: number } }
  /** Opt-in (an endpoint must name it), at most one per job every 5 s, best-effort (docs/webhooks.md, "Progress events"). */
  | { event: "job.progress"; jobId: string; orgId: string; progress: { percent: number | null; etaMs: number | null; updatedAt: number }; timing: { createdAt: number | null; startedAt: number | null } }
  /** To the org's other endpoints naming it, when an endpoint is disabled (docs/webhooks.md, "Auto-disable"). */
  | { event: "endpoint.disabled"; endpointId: string; url: string; reason: string; disabledAt: number };

/** One page of a cursor-paginated list. */
export interface Page<T> {
  data: T[];
  nextCursor: string | null;
}
