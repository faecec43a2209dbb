import { z } from "zod";
import { commonConfigSchema, env, requireProductionSecrets } from "@renderbus/config";
import { serviceTokenKeysVariable } from "@renderbus/rpc";
import { requireStorageSettings, storageVariables } from "@renderbus/storage";

/** Gateway configuration: parsed once from the environment in main.ts. */
export const gatewayConfigSchema = commonConfigSchema.extend({
  GATEWAY_PORT: env.port(3000),
  GATEWAY_HOST: z.string().default("127.0.0.1"),
  /**
   * Port of Prometheus `/metrics` (and a `/healthz`), on GATEWAY_HOST but never on the public GATEWAY_PORT: metrics
   * reveal traffic and tenants' activity, and scraping them costs CPU. 9464 as METRICS_PORT of the other services;
   * 0 picks a free port.
   */
  GATEWAY_METRICS_PORT: env.port(9464),
  /** The URL users reach the gateway at: download links, cookie security (https => Secure) and CSRF origin. */
  PUBLIC_URL: env.url(["http", "https"]).default("http://127.0.0.1:3000"),
  /**
   * Proxies in front of the gateway whose `X-Forwarded-For` is believed (comma-separated IPs or CIDRs). Empty by
   * default: the client IP is the socket peer and a client's own `X-Forwarded-For` is ignored.
   */
  TRUSTED_PROXIES: z
    .string()
    .default("")
    .transform((value) => value.split(",").map((part) => part.trim()).filter((part) => part.length > 0)),
  AUTH_GRPC_ADDRESS: z.string().default("127.0.0.1:50051"),
  JOBS_GRPC_ADDRESS: z.string().default("127.0.0.1:50052"),
  WEBHOOKS_GRPC_ADDRESS: z.string().default("127.0.0.1:50053"),
  /** The auth service's HTTP server for Better Auth (`/auth/*` is proxied there). */
  AUTH_HTTP_URL: env.url(["http", "https"]).default("http://127.0.0.1:50061"),
  /**
   * Extra HTTP readiness URLs `/readyz` also requires (comma-separated), e.g. the worker's `/readyz` under `npm start`,
   * so a restarting worker shows as not ready there. Empty by default: in Kubernetes each pod has its own probe and a
   * worker restart must not take gateway pods out of service.
   */
  READYZ_HTTP_DEPENDENCIES: z
    .string()
    .default("")
    .transform((value) => value.split(",").map((part) => part.trim()).filter((part) => part.length > 0))
    .pipe(z.array(env.url(["http", "https"]))),
  /**
   * How long a request's body may take to arrive in full when it is read into memory (JSON bodies, the inline
   * upload: at most 1-1.4 MB, so 60 s allows about 25 KB/s); past it the request is answered 400 and its connection
   * closed (http/body-deadlines.ts).
   */
  REQUEST_BODY_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(60_000),
  /**
   * The same for a tus request's body (streamed to the upload store): past it the request is cut like a lost
   * connection, the store keeps what arrived and the client resumes with a new PATCH (docs/uploads.md).
   */
  UPLOAD_REQUEST_TIMEOUT_MS: z.coerce.number().int().min(1_000).default(600_000),
  /** How long the `/auth/*` proxy waits for the auth service's whole answer; past it the client gets 503. */
  AUTH_PROXY_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /**
   * Abuse limits on `/auth/*`, counted in Redis across replicas: at most N attempts in any rolling window of
   * AUTH_LIMIT_WINDOW_SECONDS, then 429 RATE_LIMITED with Retry-After. Sign-in counts per account and client IP,
   * per account over every IP (successful sign-ins are given back to both) and per client IP; sign-up, OAuth client
   * registration, password reset and confirmation emails asked for again per client IP.
   */
  AUTH_LIMIT_WINDOW_SECONDS: z.coerce.number().int().positive().default(900),
  AUTH_SIGN_IN_PER_ACCOUNT_LIMIT: z.coerce.number().int().positive().default(5),
  AUTH_SIGN_IN_PER_ACCOUNT_ALL_IPS_LIMIT: z.coerce.number().int().positive().default(100),
  AUTH_SIGN_IN_PER_IP_LIMIT: z.coerce.number().int().positive().default(50),
  AUTH_SIGN_UP_PER_IP_LIMIT: z.coerce.number().int().positive().default(20),
  AUTH_CLIENT_REGISTRATION_PER_IP_LIMIT: z.coerce.number().int().positive().default(20),
  AUTH_PASSWORD_RESET_PER_IP_LIMIT: z.coerce.number().int().positive().default(5),
  AUTH_VERIFICATION_EMAIL_PER_IP_LIMIT: z.coerce.number().int().positive().default(5),
  /** Shared store of the per-org request counters, so the limit holds across gateway replicas. */
  REDIS_URL: env.url(["redis", "rediss"]).default("redis://127.0.0.1:6379"),
  /** Where outputs are read from: STORAGE, S3_* (libs/storage storage-config.ts), the worker's store. */
  ...storageVariables,
  /** With STORAGE=local: the directory the worker writes outputs to. */
  OUTPUT_DIR: z.string().default(".data/outputs"),
  /**
   * With STORAGE=local: where tus uploads are stored (docs/uploads.md). Workers read finished uploads from the same
   * directory: give them the same path (one machine, or a shared volume). With STORAGE=s3 uploads are under
   * `uploads/` of S3_BUCKET and this is unused.
   */
  UPLOAD_DIR: z.string().default(".data/uploads"),
  /** Hours an upload is kept after its creation, finished or not, unless a job names it; a job must name it before then. */
  UPLOAD_RETENTION_HOURS: z.coerce.number().positive().default(24),
  /**
   * Hours an upload is kept after a job named it (the latest such job counts), so a job still queued past the upload's
   * own retention finds it; the outputs' retention by default.
   */
  UPLOAD_KEEP_AFTER_USE_HOURS: z.coerce.number().positive().default(168),
  /**
   * How much an org keeps in the upload store at once, in its plan's max input sizes (10: the free plan's 100 MB
   * makes 1 GB); a new upload past it is refused with PLAN_LIMIT (uploads/upload-quota.ts).
   */
  UPLOAD_QUOTA_FACTOR: z.coerce.number().int().min(1).max(10_000).default(10),
  /** How many uploads an org keeps at once, however small. */
  UPLOAD_QUOTA_MAX_UPLOADS: z.coerce.number().int().min(1).max(1_000_000).default(1000),
  /**
   * With STORAGE=s3, how `/outputs` links deliver: `redirect` (302 to a presigned URL of the store, the bytes skip
   * the gateway; clients must reach S3_PUBLIC_ENDPOINT or S3_ENDPOINT) or `stream` (through the gateway).
   */
  S3_DOWNLOADS: z.enum(["redirect", "stream"]).default("redirect"),
  /** With S3_DOWNLOADS=redirect: how long the presigned URL of a redirect stays valid (never past the link's own expiry). */
  S3_PRESIGN_SECONDS: z.coerce.number().int().min(1).max(604_800).default(300),
  /** HMAC key of download URLs; must equal the worker's. Required in production (the default is refused there). */
  OUTPUT_SIGNING_SECRET: z.string().min(16).default("dev-output-signing-secret-change-me"),
  /** How long a resolved API key stays cached; revocations also drop entries at once through NATS. */
  AUTH_CACHE_TTL_MS: z.coerce.number().int().min(0).default(10_000),
  /**
   * How long a cached API key is served before its Redis marks (revoked, org changed) are read again; a key revoked on
   * another replica whose NATS message this one missed is refused within this time. At most 1,000 (the promise: a revoked
   * key is refused by every replica within 1 s); 0 reads the marks on every request.
   */
  AUTH_MARKS_RECHECK_MS: z.coerce.number().int().min(0).max(1_000).default(250),
  /**
   * How long a finished job's view is served from this replica's memory (GET /jobs/{id}); bounds how stale its
   * webhook delivery log can be. 0 turns the cache off. Unfinished jobs are never cached.
   */
  JOB_CACHE_TTL_MS: z.coerce.number().int().min(0).default(2_000),
  /** Per-user request budget for the dashboard (session cookie), separate from the plan's API limit. */
  SESSION_REQUESTS_PER_MINUTE: z.coerce.number().int().positive().default(600),
  /**
   * All dashboard (session cookie) requests of one org together, per minute, on top of each user's own budget: more
   * members do not buy more requests.
   */
  DASHBOARD_ORG_REQUESTS_PER_MINUTE: z.coerce.number().int().positive().default(1200),
  /**
   * Requests per minute from one client address (IPv4, or IPv6 /64) to authenticated routes, counted before the
   * credential is resolved so failed attempts count too. Behind a proxy, declare it in TRUSTED_PROXIES or every
   * client shares the proxy's budget.
   */
  IP_REQUESTS_PER_MINUTE: z.coerce.number().int().positive().default(1200),
  /**
   * How often an open SSE stream re-resolves its credential (API key, session) through the auth service; a revoked
   * key, a signed-out session or a removed member ends the stream within this time (revocation events end it at once).
   */
  SSE_RECHECK_MS: z.coerce.number().int().min(50).default(10_000),
  /** The longest an SSE stream stays open; then it ends and the client reconnects (and is authenticated afresh). */
  SSE_MAX_LIFETIME_MS: z.coerce.number().int().min(1_000).default(3_600_000),
  /** Open SSE streams (job events and webhook events together) per org across all replicas (Redis); 429 beyond. */
  SSE_MAX_STREAMS_PER_ORG: z.coerce.number().int().positive().default(20),
  /**
   * Requests of one org held open at once across replicas waiting for a job or batch to finish (`GET /jobs/{id}/wait`,
   * MCP `wait_for_job` and `tasks/result`); one past it is answered at once with the job as it is, as when its
   * timeout is up (jobs-wait/job-waits.ts).
   */
  HELD_WAITS_PER_ORG: z.coerce.number().int().positive().default(50),
  PLANS_JSON: z.string().optional(),
  /**
   * Test mode: check every response of a documented operation against its schema in /openapi.json (the route's
   * `response`, the error body) and answer 500 INTERNAL_ERROR naming the mismatch instead (http/response-check.ts).
   * Off by default (it costs a validation per response); the test suite's systems turn it on.
   */
  GATEWAY_CHECK_RESPONSES: env.bool(false),
  /** Keys of internal call tokens: this service's Ed25519 private key and its callers' public keys (libs/rpc service-keys.ts, `npm run service-keys`); required in production. */
  SERVICE_TOKEN_KEYS: serviceTokenKeysVariable(),
})
  // The default above is published: production refuses to start with it (or any other known development value).
  .superRefine(requireProductionSecrets({ OUTPUT_SIGNING_SECRET: true }))
  .superRefine(requireStorageSettings);

export type GatewayConfig = z.infer<typeof gatewayConfigSchema>;
