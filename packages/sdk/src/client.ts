import { Transport, type RetryOptions } from "./transport.js";
import { PageIterator } from "./pagination.js";
import { readEventStream, type ServerSentEvent } from "./event-stream.js";
import { waitForJob, watchJob, type WaitForJobOptions } from "./wait-for-job.js";
import { uploadFile, type UploadFileOptions, type UploadSource } from "./upload-file.js";
import type {
  ApiKey,
  Balance,
  Batch,
  CreatedApiKey,
  CreatedEndpoint,
  CreateEndpointParams,
  Delivery,
  Endpoint,
  Job,
  JobSpec,
  JobType,
  ListDeliveriesParams,
  ListBatchesParams,
  ListUploadsParams,
  ListJobsParams,
  Me,
  Org,
  Page,
  StreamedWebhook,
  SubmittedBatch,
  TestWebhookOutcome,
  UpdateEndpointParams,
  UpdateOrgWebhookParams,
  Upload,
  UploadLink,
  UsageEntry,
} from "./types.js";

export interface RenderbusClientOptions {
  /** An API key (`rb_...`); sent as `Authorization: Bearer`. */
  apiKey: string;
  /** The gateway URL, e.g. `https://api.renderbus.example` (default `http://127.0.0.1:3000`). */
  baseUrl?: string;
  retry?: RetryOptions;
  /** Per request attempt, in ms (default 60 s). */
  timeoutMs?: number;
  fetch?: typeof fetch;
  userAgent?: string;
}

export interface SubmitOptions {
  /** Reused on every retry; generated when omitted. Pass your own to make retries across processes safe too. */
  idempotencyKey?: string;
  signal?: AbortSignal;
}

const enc = encodeURIComponent;
type Data<T> = { data: T };

/**
 * The Renderbus API client: one method per REST route (the operationId in the OpenAPI document is given on each),
 * grouped by resource.
 *
 * ```ts
 * const client = new RenderbusClient({ apiKey: process.env.RENDERBUS_API_KEY!, baseUrl });
 * const job = await client.jobs.submit({ type: "thumbnail", inputs: { source: url }, params: { timestamp: 1 } });
 * const done = await client.waitForJob(job.id, { timeoutMs: 120_000 });
 * ```
 */
export class RenderbusClient {
  readonly transport: Transport;

  constructor(options: RenderbusClientOptions) {
    if (!options.apiKey) throw new TypeError("RenderbusClient: apiKey is required");
    this.transport = new Transport({
      apiKey: options.apiKey,
      baseUrl: options.baseUrl ?? "http://127.0.0.1:3000",
      ...(options.retry ? { retry: options.retry } : {}),
      ...(options.timeoutMs ? { timeoutMs: options.timeoutMs } : {}),
      ...(options.fetch ? { fetch: options.fetch } : {}),
      ...(options.userAgent ? { userAgent: options.userAgent } : {}),
    });
  }

  private async data<T>(request: Parameters<Transport["request"]>[0]): Promise<T> {
    return (await this.transport.request<Data<T>>(request)).data;
  }

  private list<T, P extends { cursor?: string }>(path: string, params: P): PageIterator<T> {
    const { cursor, ...query } = params;
    return new PageIterator<T>(
      (next) => this.transport.request<Page<T>>({ method: "GET", path, query: { ...(query as Record<string, string | number | undefined>), cursor: next } }),
      cursor,
    );
  }

  readonly jobs = {
    /** submitJob: `POST /jobs`. Retries reuse one Idempotency-Key, so a retried submission never creates two jobs. */
    submit: (spec: JobSpec, options: SubmitOptions = {}): Promise<Job> =>
      this.data({ method: "POST", path: "/jobs", body: spec, idempotent: true, idempotencyKey: options.idempotencyKey, signal: options.signal }),
    /** listJobs: `GET /jobs`, newest first; iterate with `for await` across every page. */
    list: (params: ListJobsParams = {}): PageIterator<Job> => this.list<Job, ListJobsParams>("/jobs", params),
    /** getJob: `GET /jobs/{job_id}`. */
    get: (jobId: string): Promise<Job> => this.data({ method: "GET", path: `/jobs/${enc(jobId)}` }),
    /** cancelJob: `POST /jobs/{job_id}/cancel`; CONFLICT when the job already finished. */
    cancel: (jobId: string): Promise<Job> => this.data({ method: "POST", path: `/jobs/${enc(jobId)}/cancel` }),
    /** `GET /jobs/{job_id}/events`: the job each time its status or progress changes, ending when it is terminal. */
    events: (jobId: string, signal?: AbortSignal): AsyncGenerator<Job> => jobEvents(this.transport, jobId, signal),
    /** Yields the job on every status change and progress reading until it is terminal (stream, with polling as fallback). */
    watch: (jobId: string, options: WaitForJobOptions = {}): AsyncGenerator<Job> => watchJob(this, jobId, options),
    /**
     * waitForJob: `GET /jobs/{job_id}/wait`, one long poll: the job once terminal, or as it is after `timeoutSeconds`
     * (0-60, default 30) on the server.
     */
    longPoll: (jobId: string, options: { timeoutSeconds?: number; signal?: AbortSignal } = {}): Promise<Job> =>
      this.data({
        method: "GET",
        path: `/jobs/${enc(jobId)}/wait`,
        query: { timeoutSeconds: options.timeoutSeconds },
        timeoutMs: ((options.timeoutSeconds ?? 30) + 30) * 1000,
        signal: options.signal,
      }),
    /** Resolves with the job once it is completed, failed or cancelled; throws WaitTimeoutError after `timeoutMs`. */
    wait: (jobId: string, options: WaitForJobOptions = {}): Promise<Job> => waitForJob(this, jobId, options),
  };

  readonly batches = {
    /** submitBatch: `POST /batches` (all or nothing); retries reuse one Idempotency-Key. */
    submit: (jobs: JobSpec[], options: SubmitOptions = {}): Promise<SubmittedBatch> =>
      this.data({ method: "POST", path: "/batches", body: { jobs }, idempotent: true, idempotencyKey: options.idempotencyKey, signal: options.signal }),
    /** listBatches: `GET /batches`, newest first; iterate with `for await` across every page. */
    list: (params: ListBatchesParams = {}): PageIterator<Batch> => this.list<Batch, ListBatchesParams>("/batches", params),
    /** getBatch: `GET /batches/{batch_id}`. */
    get: (batchId: string): Promise<Batch> => this.data({ method: "GET", path: `/batches/${enc(batchId)}` }),
  };

  readonly uploads = {
    /**
     * Uploads a file with tus (`POST /uploads`, then PATCH): resumes from the server's offset after a dropped
     * connection and resolves with the complete upload; pass its id as a job input (`inputs: { source: upload.id }`).
     * `onProgress(sent, total)` follows the bytes the server accepted.
     */
    upload: (source: UploadSource, options: UploadFileOptions = {}): Promise<Upload> => uploadFile(this.transport, (id) => this.uploads.get(id), source, options),
    /** listUploads: `GET /uploads`, the org's kept uploads, newest first; iterate with `for await` across every page. */
    list: (params: ListUploadsParams = {}): PageIterator<Upload> => this.list<Upload, ListUploadsParams>("/uploads", params),
    /** getUpload: `GET /uploads/{upload_id}`: size, bytes received, complete, expiry. */
    get: (uploadId: string): Promise<Upload> => this.data({ method: "GET", path: `/uploads/${enc(uploadId)}` }),
    /** createUploadLink: `POST /upload-links`: an empty upload of `size` bytes and where to PATCH them (tus). */
    createLink: (size: number, filename?: string): Promise<UploadLink> =>
      this.data({ method: "POST", path: "/upload-links", body: { size, ...(filename ? { filename } : {}) } }),
    /** uploadMedia: `POST /uploads/inline`: a file of at most 1 MB in one request, complete at once. */
    uploadInline: (bytes: Uint8Array, filename?: string): Promise<Upload> =>
      this.data({ method: "POST", path: "/uploads/inline", body: { base64: Buffer.from(bytes).toString("base64"), ...(filename ? { filename } : {}) } }),
  };

  readonly jobTypes = {
    /** listJobTypes: `GET /job-types`. */
    list: (): Promise<JobType[]> => this.data({ method: "GET", path: "/job-types" }),
    /** getJobTypeSchema: `GET /job-types/{type}`. */
    get: (type: string): Promise<JobType> => this.data({ method: "GET", path: `/job-types/${enc(type)}` }),
  };

  readonly apiKeys = {
    /** createApiKey: `POST /api-keys`; the returned `key` is shown only once. */
    create: (name: string): Promise<CreatedApiKey> => this.data({ method: "POST", path: "/api-keys", body: { name } }),
    /** listApiKeys: `GET /api-keys` (no secrets). */
    list: (): Promise<ApiKey[]> => this.data({ method: "GET", path: "/api-keys" }),
    /** revokeApiKey: `DELETE /api-keys/{key_id}`; effective at once on every gateway. */
    revoke: (keyId: string): Promise<ApiKey> => this.data({ method: "DELETE", path: `/api-keys/${enc(keyId)}` }),
  };

  readonly orgs = {
    /** getOrg: `GET /orgs/current`. */
    current: (): Promise<Org> => this.data({ method: "GET", path: "/orgs/current" }),
    /** updateOrgWebhook: `PATCH /orgs/{org_id}` (plans starter and above). */
    updateWebhook: (orgId: string, params: UpdateOrgWebhookParams): Promise<Org> => this.data({ method: "PATCH", path: `/orgs/${enc(orgId)}`, body: params }),
  };

  readonly billing = {
    /** getBalance: `GET /billing/balance`. */
    balance: (): Promise<Balance> => this.data({ method: "GET", path: "/billing/balance" }),
    /** getUsage: `GET /billing/usage`, newest first, paginated. */
    usage: (params: { limit?: number; cursor?: string } = {}): PageIterator<UsageEntry> => this.list<UsageEntry, { limit?: number; cursor?: string }>("/billing/usage", params),
  };

  readonly webhooks = {
    /** listWebhookDeliveries: `GET /webhooks/deliveries`, newest first, paginated. */
    deliveries: (params: ListDeliveriesParams = {}): PageIterator<Delivery> => this.list<Delivery, ListDeliveriesParams>("/webhooks/deliveries", params),
    /** retryWebhookDelivery: `POST /webhooks/deliveries/{del_id}/retry`. */
    retry: (deliveryId: string): Promise<Delivery> => this.data({ method: "POST", path: `/webhooks/deliveries/${enc(deliveryId)}/retry` }),
    /** sendTestWebhook: `POST /webhooks/test`, a signed webhook.test to the org's webhookUrl (or `endpointId`); reports whether it answered 2xx. */
    test: (params: { endpointId?: string } = {}): Promise<TestWebhookOutcome> => this.data({ method: "POST", path: "/webhooks/test", body: params, timeoutMs: 45_000 }),
    /**
     * `GET /webhooks/events/stream`: every webhook payload of the org as it happens (what `renderbus webhooks listen`
     * forwards). Yields `ready` once subscribed, then one item per webhook.
     */
    events: (signal?: AbortSignal): AsyncGenerator<{ type: "ready" } | ({ type: "webhook" } & StreamedWebhook)> => webhookEvents(this.transport, signal),
    /** Webhook endpoints (docs/webhooks.md, "Endpoints"); `ep_default` is the org's webhookUrl. */
    endpoints: {
      /** listWebhookEndpoints: `GET /webhooks/endpoints`. */
      list: (): Promise<Endpoint[]> => this.data({ method: "GET", path: "/webhooks/endpoints" }),
      /** createWebhookEndpoint: `POST /webhooks/endpoints`; the secret is only in this answer. */
      create: (params: CreateEndpointParams): Promise<CreatedEndpoint> => this.data({ method: "POST", path: "/webhooks/endpoints", body: params }),
      /** getWebhookEndpoint: `GET /webhooks/endpoints/{endpoint_id}`. */
      get: (endpointId: string): Promise<Endpoint> => this.data({ method: "GET", path: `/webhooks/endpoints/${enc(endpointId)}` }),
      /** updateWebhookEndpoint: `PATCH /webhooks/endpoints/{endpoint_id}`; `{ enabled: true }` re-enables one. */
      update: (endpointId: string, params: UpdateEndpointParams): Promise<Endpoint> => this.data({ method: "PATCH", path: `/webhooks/endpoints/${enc(endpointId)}`, body: params }),
      /** deleteWebhookEndpoint: `DELETE /webhooks/endpoints/{endpoint_id}`. */
      delete: (endpointId: string): Promise<{ id: string; deleted: boolean }> => this.data({ method: "DELETE", path: `/webhooks/endpoints/${enc(endpointId)}` }),
      /** rotateWebhookEndpointSecret: both secrets sign for `graceSeconds` (default 24 h); the new one is only in this answer. */
      rotateSecret: (endpointId: string, params: { secret?: string; graceSeconds?: number } = {}): Promise<CreatedEndpoint> =>
        this.data({ method: "POST", path: `/webhooks/endpoints/${enc(endpointId)}/rotate-secret`, body: params }),
      /** recoverWebhookEndpoint: new attempt chains for failed and skipped deliveries created in [since, until). */
      recover: (endpointId: string, params: { since: number; until?: number }): Promise<{ count: number }> =>
        this.data({ method: "POST", path: `/webhooks/endpoints/${enc(endpointId)}/recover`, body: params }),
    },
  };

  /** getMe: `GET /me`, the auth context of the key. */
  me(): Promise<Me> {
    return this.data({ method: "GET", path: "/me" });
  }

  /** Resolves with the job once it is completed, failed or cancelled; throws WaitTimeoutError after `timeoutMs`. */
  waitForJob(jobId: string, options: WaitForJobOptions = {}): Promise<Job> {
    return waitForJob(this, jobId, options);
  }
}

async function* jobEvents(transport: Transport, jobId: string, signal?: AbortSignal): AsyncGenerator<Job> {
  for await (const event of readEventStream(transport, `/jobs/${enc(jobId)}/events`, signal)) yield parse<Job>(event);
}

async function* webhookEvents(transport: Transport, signal?: AbortSignal): AsyncGenerator<{ type: "ready" } | ({ type: "webhook" } & StreamedWebhook)> {
  for await (const event of readEventStream(transport, "/webhooks/events/stream", signal)) {
    if (event.event === "ready") yield { type: "ready" };
    else if (event.event === "webhook") yield { type: "webhook", ...parse<StreamedWebhook>(event) };
  }
}

const parse = <T>(event: ServerSentEvent): T => JSON.parse(event.data) as T;
