import { z } from "zod";
import { commonConfigSchema, databaseVariables, env, requireProductionSecrets, streamVariables } from "@renderbus/config";
import { secretsEncryptionVariables, secretsKeyringProductionCheck } from "@renderbus/secret-box";
import { serviceTokenKeysVariable } from "@renderbus/rpc";

/** The dispatcher's environment. Keys are the environment variable names. */
export const configSchema = commonConfigSchema
  .extend({
  ...databaseVariables,
  ...streamVariables,
  /** Auth service: the source of each org's webhook URL, secret and plan. */
  AUTH_GRPC_ADDRESS: z.string().default("127.0.0.1:50051"),
  /** 0 picks a free port (tests). */
  WEBHOOKS_GRPC_PORT: env.port(50053),
  WEBHOOKS_GRPC_HOST: z.string().default("127.0.0.1"),
  /** Prometheus `/metrics` over plain HTTP; 0 picks a free port, unset disables it. */
  METRICS_PORT: z.coerce.number().int().min(0).max(65535).optional(),
  /** Delays before retries 1, 2, 3, ... after each failed attempt; one more attempt than entries in all (seed: 3). */
  WEBHOOK_RETRY_SCHEDULE_MS: env.intList("5000,25000,125000"),
  /**
   * The `extended` schedule an endpoint may choose (docs/webhooks.md): the seed's delays, then 10 min, 1 h, 6 h and
   * 24 h (8 attempts in all).
   */
  WEBHOOK_EXTENDED_RETRY_SCHEDULE_MS: env.intList("5000,25000,125000,600000,3600000,21600000,86400000"),
  /**
   * Auto-disable: an endpoint whose deliveries have all failed for this long (and at least
   * WEBHOOK_DISABLE_MIN_FAILURES of them) is disabled (docs/webhooks.md, "Auto-disable").
   */
  WEBHOOK_DISABLE_AFTER: env.duration("24h"),
  /** The variable's former name, in milliseconds: refused, so a deployment that still sets it learns of the rename. */
  WEBHOOK_DISABLE_AFTER_MS: z.undefined({ error: "was renamed: set WEBHOOK_DISABLE_AFTER to a duration such as 24h" }).optional(),
  /** PostgreSQL pool size per replica: the claim loop, the ingest's group commits and the attempts' writes share it. */
  DATABASE_MAX_CONNECTIONS: z.coerce.number().int().positive().default(20),
  WEBHOOK_DISABLE_MIN_FAILURES: z.coerce.number().int().positive().default(20),
  /** Endpoints per org, the default one included. */
  WEBHOOK_ENDPOINTS_MAX: z.coerce.number().int().positive().default(20),
  /** Deliveries one recover call restarts at most. */
  WEBHOOK_RECOVER_MAX: z.coerce.number().int().positive().default(10_000),
  /** One recover call per endpoint per this long (RATE_LIMITED otherwise). */
  WEBHOOK_RECOVER_INTERVAL_MS: z.coerce.number().int().min(0).default(60_000),
  /**
   * How long an org's endpoints (URL, secrets, filter, state) are reused before they are read again. Every replica
   * forgets an org's entry when a change to its endpoints commits (NOTIFY, endpoint-changes.ts), and all of them after
   * its LISTEN connection was lost: this only bounds how long a notice lost some other way leaves an entry stale.
   */
  WEBHOOK_ENDPOINT_CACHE_MS: z.coerce.number().int().min(0).default(60_000),
  ...secretsEncryptionVariables,
  /** An attempt without a 2xx answer inside this time counts as failed (seed: 10 s). */
  WEBHOOK_TIMEOUT_MS: z.coerce.number().int().positive().default(10_000),
  /** `X-<brand>-Signature` etc., so receivers written for another brand of the protocol keep working. */
  WEBHOOK_HEADER_BRAND: z.string().regex(/^[A-Za-z0-9-]+$/).default("Renderbus"),
  /**
   * `true` turns the SSRF guard off: webhooks may then reach private, loopback and link-local addresses (a loopback
   * demo, tests). Off by default in every mode; response bodies of private targets are never recorded.
   */
  ALLOW_PRIVATE_ADDRESSES: env.allowPrivateAddresses(),
  /**
   * Attempts in flight at once in this process (sent, not yet answered). An answered attempt gives its slot to the
   * next one while its record waits for its group's commit; at most this many records wait so.
   */
  DISPATCHER_CONCURRENCY: z.coerce.number().int().positive().default(64),
  /**
   * Attempts in flight at once per org across all replicas: a hanging receiver holds at most this many slots,
   * so other orgs' deliveries keep flowing.
   */
  DISPATCHER_ORG_MAX_IN_FLIGHT: z.coerce.number().int().positive().default(8),
  /** Job events handled at once by this process's consumer. */
  DISPATCHER_CONSUMER_CONCURRENCY: z.coerce.number().int().positive().default(64),
  /**
   * While every attempt slot of this process is busy, a job event owing deliveries waits for one; it stops waiting,
   * and its deliveries are written to wait for a claim instead, once no slot has come free for this long (every
   * attempt hangs on slow receivers), or after a quarter of DISPATCHER_ACK_WAIT_MS in all. Waiting, it stays unacked in
   * JetStream; written leased, it is attempted without a claim. Below DISPATCHER_ACK_WAIT_MS.
   */
  DISPATCHER_INGEST_SLOT_WAIT_MS: z.coerce.number().int().min(0).default(2000),
  /** JetStream ack wait of the job-events consumer: how soon a dead replica's unacked events go to another one. */
  DISPATCHER_ACK_WAIT_MS: z.coerce.number().int().positive().default(30_000),
  /** Safety-net poll of the due-time queue (a missed NOTIFY, an expired lease of a crashed replica). */
  DISPATCHER_POLL_INTERVAL_MS: z.coerce.number().int().positive().default(1000),
  /**
   * A claimed delivery's lease is the attempt timeout plus this grace; when a replica dies mid-attempt, others
   * take its deliveries over once the lease has run out.
   */
  DISPATCHER_LEASE_GRACE_MS: z.coerce.number().int().positive().default(30_000),
  /**
   * A delivery is announced (DeliveryUpdated) by its first attempt; one still waiting for it after this long (a
   * backlog, an org at its cap) is announced as pending, so job records show it. Also how often that is checked.
   */
  DISPATCHER_ANNOUNCE_WAITING_AFTER_MS: z.coerce.number().int().positive().default(1000),
  /** At most one `job.progress` delivery per job and endpoint this often (docs/webhooks.md, "Progress events"). */
  WEBHOOK_PROGRESS_INTERVAL_MS: z.coerce.number().int().positive().default(5000),
  /** Progress readings turned into deliveries at once by this process; readings beyond are dropped (best-effort). */
  DISPATCHER_PROGRESS_MAX_IN_FLIGHT: z.coerce.number().int().positive().default(64),
  /**
   * How long a webhook target (URL, secret, plan) is reused before asking the auth service again. Forgotten at once on
   * `auth.events.org.updated`, and all of them after the NATS connection was lost (notices published meanwhile are
   * missed): this only bounds how long a lost notice leaves a target stale.
   */
  WEBHOOK_TARGET_CACHE_MS: z.coerce.number().int().min(0).default(60_000),
  /** How often expired rows are pruned (src/retention/prune.ts). */
  RETENTION_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(60 * 60 * 1000),
  /** Finished deliveries and their attempt logs are deleted this long after their creation and last attempt. */
  DELIVERY_RETENTION_DAYS: z.coerce.number().positive().default(30),
  /**
   * How long a job event's `processed_events` marker (and a completed batch's bookkeeping) is kept. It must outlast
   * JOBS_EVENTS' max age (7 days), the longest JetStream could deliver the event again, hence at least 8.
   */
  PROCESSED_EVENT_RETENTION_DAYS: z.coerce.number().min(8).default(14),
  /** Keys of internal call tokens: this service's Ed25519 private key and its callers' public keys (libs/rpc service-keys.ts, `npm run service-keys`); required in production. */
  SERVICE_TOKEN_KEYS: serviceTokenKeysVariable(),
  })
  // Endpoint secrets are sealed with the same keys as the org's webhook secret (auth).
  .superRefine((config, context) => requireProductionSecrets(secretsKeyringProductionCheck(config))(config, context))
  .refine((config) => config.DISPATCHER_INGEST_SLOT_WAIT_MS < config.DISPATCHER_ACK_WAIT_MS, {
    // An event held longer than its ack wait would be delivered to another replica meanwhile.
    message: "DISPATCHER_INGEST_SLOT_WAIT_MS must be below DISPATCHER_ACK_WAIT_MS",
    path: ["DISPATCHER_INGEST_SLOT_WAIT_MS"],
  });

export type DispatcherConfig = z.infer<typeof configSchema>;
