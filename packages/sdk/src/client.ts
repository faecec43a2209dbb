import { Transport, type RetryOptions } from "./transport.js";
import { PageIterator } from "./pagination.js";
import { readEventStream, type ServerSentEvent } from "./event-stream.js";
import { waitForJob, watchJob, type WaitForJobOptions } from "./wait-for-job.js";
import type {
  ApiKey,
  Balance,
  Batch,
  CreatedApiKey,
  Delivery,
  Job,
  JobSpec,
  JobType,
  ListDeliveriesParams,
  ListBatchesParams,
  ListJobsParams,
  Me,
  Org,
  Page,
  StreamedWebhook,
  SubmittedBatch,
  TestWebhookOutcome,
  UpdateOrgWebhookParams,
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
    /** `GET /jobs/{job_id}/events`: the job each time its status changes, ending when it is terminal. */
    events: (jobId: string, signal?: AbortSignal): AsyncGenerator<Job> => jobEvents(this.transport, jobId, signal),
    /** Yields the job on every status change until it is terminal (stream, with polling as fallback). */
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
    /** sendTestWebhook: `POST /webhooks/test`; reports whether the configured URL answered 2xx. */
    test: (): Promise<TestWebhookOutcome> => this.data({ method: "POST", path: "/webhooks/test", timeoutMs: 45_000 }),
    /**
     * `GET /webhooks/events/stream`: every webhook payload of the org as it happens (what `renderbus webhooks listen`
     * forwards). Yields `ready` once subscribed, then one item per webhook.
     */
    events: (signal?: AbortSignal): AsyncGenerator<{ type: "ready" } | ({ type: "webhook" } & StreamedWebhook)> => webhookEvents(this.transport, signal),
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
