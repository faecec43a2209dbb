import type { auth, jobs, webhooks } from "@renderbus/contracts";
import { planOf, type Plan, type PlanName } from "@renderbus/plans";
import type { JobProgress } from "../sse/job-progress-hub.js";

/**
 * Proto messages as the public JSON of jobs, batches and deliveries (packages/sdk/src/types.ts): absent optional fields become null (never missing),
 * internal fields (output keys) are dropped.
 */
const orNull = <T>(value: T | undefined): T | null => (value === undefined ? null : value);

/**
 * `progress` of the job object (docs/concepts.md, "Progress"): the last tick while running (null before the first
 * and for jobs whose output has no length), 100% once completed, null otherwise.
 */
export function progressOf(job: jobs.Job, running: JobProgress | null | undefined): JobProgress | null {
  if (job.status === "running") return running ?? null;
  if (job.status === "completed") return { percent: 100, etaMs: 0, updatedAt: job.timing?.completedAt ?? job.timing?.createdAt ?? 0 };
  return null;
}

/** @param progress the running job's last progress tick (JobProgressHub), if any. */
export function presentJob(job: jobs.Job, progress?: JobProgress | null) {
  return {
    id: job.id,
    orgId: job.orgId,
    batchId: orNull(job.batchId),
    type: job.type,
    status: job.status,
    inputs: job.inputs ?? {},
    params: job.params ?? {},
    metadata: job.metadata ?? {},
    result: job.result
      ? {
          url: job.result.url,
          metadata: {
            durationMs: orNull(job.result.metadata?.durationMs),
            width: orNull(job.result.metadata?.width),
            height: orNull(job.result.metadata?.height),
            fileSize: orNull(job.result.metadata?.fileSize),
          },
        }
      : null,
    cost: job.cost ? { credits: job.cost.credits, breakdown: job.cost.breakdown } : null,
    error: job.error ? { code: job.error.code, message: job.error.message } : null,
    timing: {
      createdAt: job.timing?.createdAt ?? null,
      dispatchedAt: orNull(job.timing?.dispatchedAt),
      startedAt: orNull(job.timing?.startedAt),
      completedAt: orNull(job.timing?.completedAt),
    },
    progress: progressOf(job, progress),
    webhookDeliveries: job.webhookDeliveries.map((delivery) => ({
      id: delivery.id,
      event: delivery.event,
      status: delivery.status,
      attempts: delivery.attempts,
      lastAttemptAt: orNull(delivery.lastAttemptAt),
      nextAttemptAt: orNull(delivery.nextAttemptAt),
      lastResponseStatus: orNull(delivery.lastResponseStatus),
      lastError: orNull(delivery.lastError),
    })),
  };
}

export function presentBatch(batch: jobs.Batch) {
  return {
    id: batch.id,
    orgId: batch.orgId,
    jobCount: batch.jobCount,
    jobIds: batch.jobIds,
    status: batch.status,
    counts: batch.counts ?? { waiting: 0, dispatched: 0, running: 0, completed: 0, failed: 0, cancelled: 0 },
    timing: { createdAt: batch.createdAt, completedAt: orNull(batch.completedAt) },
  };
}

export function presentApiKey(key: auth.ApiKey) {
  return {
    id: key.id,
    name: key.name,
    start: key.start,
    createdAt: key.createdAt,
    lastUsedAt: orNull(key.lastUsedAt),
    revokedAt: orNull(key.revokedAt),
  };
}

/** The org, with its plan's limits as this deployment enforces them (PLANS_JSON applied). */
export function presentOrg(org: auth.Org, plans: Record<PlanName, Plan>) {
  const plan = planOf(org.plan, plans);
  return {
    id: org.id,
    name: org.name,
    plan: org.plan,
    credits: org.credits,
    webhookUrl: orNull(org.webhookUrl),
    webhookSecretSet: org.webhookSecretSet,
    createdAt: org.createdAt,
    limits: {
      requestsPerMinute: plan.requestsPerMinute,
      concurrency: plan.concurrency,
      maxBatchSize: plan.maxBatchSize,
      maxQueuedJobs: plan.maxQueuedJobs,
      maxRunSeconds: plan.maxRunSeconds,
      maxInputBytes: plan.maxInputBytes,
      monthlyCredits: plan.monthlyCredits,
      webhooks: plan.webhooks,
      jobTypes: plan.jobTypes,
    },
  };
}

export function presentDelivery(delivery: webhooks.Delivery) {
  return {
    id: delivery.id,
    event: delivery.event,
    jobId: orNull(delivery.jobId),
    batchId: orNull(delivery.batchId),
    status: delivery.status,
    attempts: delivery.attempts,
    url: delivery.url,
    endpointId: delivery.endpointId || "ep_default",
    createdAt: delivery.createdAt,
    lastAttemptAt: orNull(delivery.lastAttemptAt),
    nextAttemptAt: orNull(delivery.nextAttemptAt),
    lastResponseStatus: orNull(delivery.lastResponseStatus),
    lastError: orNull(delivery.lastError),
    body: delivery.body,
    attemptLog: delivery.attemptLog.map((attempt) => ({
      attempt: attempt.attempt,
      startedAt: attempt.startedAt,
      responseStatus: orNull(attempt.responseStatus),
      error: orNull(attempt.error),
      latencyMs: attempt.latencyMs,
      responseExcerpt: orNull(attempt.responseExcerpt),
      // The dispatcher never stores signatures; dropped here as well so no path can ever show one.
      requestHeaders: withoutSignatures(attempt.requestHeaders),
      responseHeaders: { ...attempt.responseHeaders },
    })),
  };
}

/** Request headers of an attempt minus any signature header, whatever its brand or letter case. */
function withoutSignatures(headers: Record<string, string>): Record<string, string> {
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !/^(?:x-[a-z0-9-]+-signature|webhook-signature)$/i.test(name)));
}

/** A webhook endpoint as the API shows it (never a secret). */
export function presentEndpoint(endpoint: webhooks.Endpoint) {
  return {
    id: endpoint.id,
    url: endpoint.url,
    description: endpoint.description,
    events: endpoint.events,
    enabled: endpoint.enabled,
    disabledReason: orNull(endpoint.disabledReason),
    disabledAt: orNull(endpoint.disabledAt),
    ordering: endpoint.ordering,
    rateLimitPerSecond: orNull(endpoint.rateLimitPerSecond),
    retrySchedule: endpoint.retrySchedule,
    secretSet: endpoint.secretSet,
    previousSecretExpiresAt: orNull(endpoint.previousSecretExpiresAt),
    recentDeliveries: endpoint.recent ? { succeeded: endpoint.recent.succeeded, failed: endpoint.recent.failed } : null,
    createdAt: endpoint.createdAt,
  };
}
