import type { Redis } from "ioredis";
import type { auth, jobs, webhooks } from "@renderbus/contracts";
import type { Bus } from "@renderbus/bus";
import type { PromiseClient } from "@renderbus/rpc";
import type { Logger } from "@renderbus/telemetry";
import type { Plan, PlanName } from "@renderbus/plans";
import type { ObjectStore } from "@renderbus/storage";
import type { UploadStore } from "@renderbus/uploads";
import type { GatewayConfig } from "./config.js";
import type { CredentialResolver } from "./auth/credential-resolver.js";
import type { RateLimiter } from "./auth/rate-limiter.js";
import type { JobEventHub } from "./sse/job-event-hub.js";
import type { UploadQuota } from "./uploads/upload-quota.js";
import type { JobProgressHub } from "./sse/job-progress-hub.js";
import type { TerminalJobCache } from "./jobs-cache/terminal-job-cache.js";
import type { Registry } from "@renderbus/telemetry";

/** Everything routes need, built once in service.ts. */
export interface GatewayDeps {
  config: GatewayConfig;
  logger: Logger;
  plans: Record<PlanName, Plan>;
  auth: PromiseClient<auth.AuthClient>;
  billing: PromiseClient<auth.BillingClient>;
  jobs: PromiseClient<jobs.JobsClient>;
  webhooks: PromiseClient<webhooks.WebhooksClient>;
  bus: Bus;
  redis: Redis;
  credentials: CredentialResolver;
  rateLimiter: RateLimiter;
  outputs: ObjectStore;
  uploads: UploadStore;
  /** What each org keeps in the upload store at once (UPLOAD_QUOTA_*). */
  uploadQuota: UploadQuota;
  jobEvents: JobEventHub;
  /** Running jobs' live progress (absent in gateways built without NATS: every job then shows none while running). */
  jobProgress?: JobProgressHub;
  finishedJobs: TerminalJobCache;
  metrics: Registry;
}
