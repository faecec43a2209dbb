import type { jobEvents } from "@renderbus/contracts";

/**
 * The JSON bodies of webhooks (docs/webhooks.md), built from job and batch events. One definition for
 * the dispatcher, which signs and sends them, and the gateway's webhook event stream (`renderbus webhooks listen`),
 * which must produce the same bytes. Member order is part of the contract: receivers see these exact bytes.
 */

/** Counts of a finished batch by terminal status. */
export interface BatchCounts {
  completed: number;
  failed: number;
  cancelled: number;
}

const orNull = (value: number | undefined | null): number | null => (value === undefined ? null : value);

/** `job.running`: `{event, jobId, type, timing:{createdAt, startedAt}}`. */
export function jobRunningPayload(started: jobEvents.JobStarted) {
  return {
    event: "job.running" as const,
    jobId: started.jobId,
    type: started.type,
    timing: { createdAt: started.createdAt, startedAt: started.startedAt },
  };
}

/** `job.completed`: result, cost and timing; metadata fields that do not apply are null. */
export function jobCompletedPayload(completed: jobEvents.JobCompleted) {
  const metadata = completed.result?.metadata;
  return {
    event: "job.completed" as const,
    jobId: completed.jobId,
    result: {
      url: completed.result?.url ?? null,
      metadata: {
        durationMs: orNull(metadata?.durationMs),
        width: orNull(metadata?.width),
        height: orNull(metadata?.height),
        fileSize: orNull(metadata?.fileSize),
      },
    },
    cost: { credits: completed.cost?.credits ?? 0, breakdown: completed.cost?.breakdown ?? "" },
    timing: jobTiming(completed.timing),
  };
}

/** `job.failed`: error and timing, and no cost member at all (docs/webhooks.md). */
export function jobFailedPayload(failed: jobEvents.JobFailed) {
  return {
    event: "job.failed" as const,
    jobId: failed.jobId,
    error: { code: failed.error?.code ?? "PROVIDER_ERROR", message: failed.error?.message ?? "" },
    timing: jobTiming(failed.timing),
  };
}

/** `batch.completed`: `{event, batchId, jobCount, counts, timing:{createdAt, completedAt}}`. */
export function batchCompletedPayload(batch: { batchId: string; jobCount: number; counts: BatchCounts; createdAt: number; completedAt: number }) {
  return {
    event: "batch.completed" as const,
    batchId: batch.batchId,
    jobCount: batch.jobCount,
    counts: { completed: batch.counts.completed, failed: batch.counts.failed, cancelled: batch.counts.cancelled },
    timing: { createdAt: batch.createdAt, completedAt: batch.completedAt },
  };
}

/** A running job's progress reading (docs/concepts.md, "Progress"). */
export interface JobProgressReading {
  orgId: string;
  jobId: string;
  percent: number | null;
  etaMs: number | null;
  updatedAt: number;
  /** When the job was created and started; null members when the worker did not say (an older worker). */
  timing?: { createdAt: number; startedAt: number };
}

/**
 * `job.progress` (opt-in, at most one per job and endpoint every 5 s):
 * `{event, jobId, orgId, progress:{percent, etaMs, updatedAt}, timing:{createdAt, startedAt}}`.
 */
export function jobProgressPayload(reading: JobProgressReading) {
  return {
    event: "job.progress" as const,
    jobId: reading.jobId,
    orgId: reading.orgId,
    progress: { percent: reading.percent, etaMs: reading.etaMs, updatedAt: reading.updatedAt },
    timing: { createdAt: reading.timing?.createdAt ?? null, startedAt: reading.timing?.startedAt ?? null },
  };
}

/** `webhook.test`: what `POST /webhooks/test` sends so users can check their receiver and signature code. */
export function webhookTestPayload(orgId: string, now: number) {
  return {
    event: "webhook.test" as const,
    orgId,
    message: "This is a test event from Renderbus",
    timing: { createdAt: now },
  };
}

function jobTiming(timing: { createdAt: number; startedAt?: number; completedAt?: number } | undefined) {
  return {
    createdAt: timing?.createdAt ?? null,
    startedAt: orNull(timing?.startedAt),
    completedAt: orNull(timing?.completedAt),
  };
}
