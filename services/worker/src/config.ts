import { z } from "zod";
import { commonConfigSchema, env, requireProductionSecrets, streamVariables } from "@renderbus/config";
import { serviceTokenKeysVariable } from "@renderbus/rpc";
import { requireStorageSettings, storageVariables } from "@renderbus/storage";

/** Worker configuration: parsed once from the environment in main.ts. */
export const workerConfigSchema = commonConfigSchema.extend({
  ...streamVariables,
  /** Where outputs go: STORAGE, S3_* (libs/storage storage-config.ts); the gateway must point at the same store. */
  ...storageVariables,
  /**
   * `true` turns the SSRF guard off: inputs on private, loopback and link-local addresses are then fetched (a loopback
   * demo, tests). Off by default in every mode.
   */
  ALLOW_PRIVATE_ADDRESSES: env.allowPrivateAddresses(),
  /** The jobs service, which receives StartJob / CompleteJob / FailJob reports. */
  JOBS_GRPC_ADDRESS: z.string().default("127.0.0.1:50052"),
  /** The auth service, whose Billing part reserves credits before a provider starts. */
  AUTH_GRPC_ADDRESS: z.string().default("127.0.0.1:50051"),
  /** With STORAGE=local: the output directory; the gateway serves downloads from the same directory. */
  OUTPUT_DIR: z.string().default(".data/outputs"),
  /**
   * With STORAGE=local: where inputs given as upload ids are read (docs/uploads.md), the gateway's UPLOAD_DIR, the
   * same directory on one machine or a volume both mount. With STORAGE=s3 the worker reads `uploads/` of S3_BUCKET.
   */
  UPLOAD_DIR: z.string().default(".data/uploads"),
  /** Must equal the gateway's: an upload older than this is refused (it is being deleted). */
  UPLOAD_RETENTION_HOURS: z.coerce.number().positive().default(24),
  /** HMAC key of download URLs; must equal the gateway's. Required in production (the default is refused there). */
  OUTPUT_SIGNING_SECRET: z.string().min(16).default("dev-output-signing-secret-change-me"),
  /** Base URL of the gateway, the host of download links. */
  PUBLIC_URL: env.url(["http", "https"]).default("http://127.0.0.1:3000"),
  /** Jobs run at once by one worker process (each runs an ffmpeg); scale out with more replicas. */
  WORKER_CONCURRENCY: z.coerce.number().int().min(1).max(64).default(2),
  /**
   * `off`: running jobs report no progress (ffmpeg runs without `-progress`, `job.progress` stays null): the
   * progress-overhead benchmark's baseline, or a worker that must not publish it (docs/operations.md).
   */
  WORKER_PROGRESS: z.enum(["on", "off"]).default("on"),
  /** Download links stay valid this long. */
  OUTPUT_RETENTION_DAYS: z.coerce.number().positive().default(7),
  /** Whole-download deadline per input, for a download slower than INPUT_MIN_BYTES_PER_SECOND. */
  INPUT_FETCH_TIMEOUT_MS: z.coerce.number().int().positive().default(120_000),
  /**
   * Past INPUT_FETCH_TIMEOUT_MS, a download goes on while it averages at least this many bytes a second since it
   * started, up to the plan's max input size at that rate (a 5 GB scale input: 43 min at the default 2 MiB/s).
   */
  INPUT_MIN_BYTES_PER_SECOND: z.coerce.number().int().positive().default(2 * 1024 * 1024),
  /** Input download: TCP connect plus TLS handshake (a server that accepts and never answers). */
  INPUT_CONNECT_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /** Input download: from connected to the end of the response headers. */
  INPUT_HEADERS_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  /** Input download: the longest silence between two pieces of the body (our own disk backpressure excluded). */
  INPUT_BODY_IDLE_TIMEOUT_MS: z.coerce.number().int().positive().default(30_000),
  /** A job message not acked nor heartbeated for this long goes to another worker (a crashed worker's job). */
  WORKER_ACK_WAIT_MS: z.coerce.number().int().min(1000).default(60_000),
  /**
   * Tests only, ignored in production: an input URL with `?rb-test-crash=throw|sigkill` crashes the worker process
   * (dispatch/test-crash-hook.ts), to show a crashing job is failed and the worker comes back.
   */
  WORKER_TEST_CRASH_HOOK: z.stringbool().default(false),
  /**
   * How ffmpeg and ffprobe are isolated (sandbox/sandbox.ts): `bwrap` (bubblewrap namespaces: only the job's directory,
   * no network) or `none`. Unset: bwrap when it works here; production then refuses to start without it.
   */
  WORKER_SANDBOX: z.enum(["bwrap", "none"]).optional(),
  /** Address space (RLIMIT_AS) of each ffmpeg/ffprobe process, in MiB: virtual size, well above what it touches. */
  WORKER_SANDBOX_MEMORY_MB: z.coerce.number().int().min(256).default(4096),
  /** RLIMIT_NPROC of each ffmpeg/ffprobe process (threads count); not enforced by Linux when the worker runs as root. */
  WORKER_SANDBOX_MAX_PROCESSES: z.coerce.number().int().min(16).default(512),
  /** Largest decoded picture (width x height) of an input; default 7680 x 7680, the largest output a job may ask for. */
  MEDIA_MAX_PIXELS: z.coerce.number().int().positive().default(7680 * 7680),
  /** Highest average frame rate of an input video stream. */
  MEDIA_MAX_FPS: z.coerce.number().positive().default(120),
  /** Largest output file of a job, in bytes (ffmpeg `-fs`); a job reaching it fails with INPUT_ERROR. */
  OUTPUT_MAX_BYTES: z.coerce.number().int().positive().default(2 * 1024 ** 3),
  /** Name reported with StartJob; defaults to host and pid. */
  WORKER_ID: z.string().optional(),
  /** Keys of internal call tokens: this service's Ed25519 private key and its callers' public keys (libs/rpc service-keys.ts, `npm run service-keys`); required in production. */
  SERVICE_TOKEN_KEYS: serviceTokenKeysVariable(),
})
  // The default above is published: production refuses to start with it (or any other known development value).
  .superRefine(requireProductionSecrets({ OUTPUT_SIGNING_SECRET: true }))
  .superRefine(requireStorageSettings);

export type WorkerConfig = z.infer<typeof workerConfigSchema>;
