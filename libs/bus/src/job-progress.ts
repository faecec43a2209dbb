/**
 * Live job progress (docs/concepts.md, "Progress"; docs/events.md): core NATS messages, never stored, published by
 * the worker at most every 500 ms per running job and fanned out by every gateway replica.
 */

/** Every job's progress messages (`jobs.progress.<orgId>.<jobId>`). Outside every stream's subjects: never persisted. */
export const JOB_PROGRESS_SUBJECTS = "jobs.progress.*.*";

const TOKEN = /^[A-Za-z0-9_-]{1,100}$/;

/** The subject of one job's progress, or undefined when an id is not a plain subject token (it is then not sent). */
export function jobProgressSubject(orgId: string, jobId: string): string | undefined {
  return TOKEN.test(orgId) && TOKEN.test(jobId) ? `jobs.progress.${orgId}.${jobId}` : undefined;
}

/** When a running job was created and started (epoch ms), as its progress messages carry it. */
export interface JobProgressTiming {
  createdAt: number;
  startedAt: number;
}

/** The body of a progress message. */
export interface JobProgressMessage {
  orgId: string;
  jobId: string;
  /** 0-100; null when the expected output length is unknown. */
  percent: number | null;
  etaMs: number | null;
  /** Epoch ms. */
  updatedAt: number;
  /** When the job was created and started (epoch ms); absent from workers older than the `job.progress` timing. */
  timing?: JobProgressTiming;
}
