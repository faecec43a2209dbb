import type { jobEvents, jobs } from "@renderbus/contracts";
import { JOB_STATUSES, TERMINAL_JOB_STATUSES, type JobStatus } from "@renderbus/job-types";

export type { JobStatus };
/** Statuses that hold one of the org's concurrency slots. */
export const ACTIVE_STATUSES: readonly JobStatus[] = ["dispatched", "running"];

export const isTerminal = (status: JobStatus): boolean => TERMINAL_JOB_STATUSES.includes(status);
export const isJobStatus = (value: string): value is JobStatus => (JOB_STATUSES as readonly string[]).includes(value);

export type JobLimits = jobEvents.JobLimits;

/** The events of the job aggregate as stored in its stream (stream id = job id). */
export type JobEvent =
  | { type: "JobQueued"; data: jobEvents.JobQueued }
  | { type: "JobDispatched"; data: jobEvents.JobDispatched }
  | { type: "JobStarted"; data: jobEvents.JobStarted }
  | { type: "JobCompleted"; data: jobEvents.JobCompleted }
  | { type: "JobFailed"; data: jobEvents.JobFailed }
  | { type: "JobCancelled"; data: jobEvents.JobCancelled };

export type JobEventType = JobEvent["type"];

/** What a submission fixes for the job's whole life. */
export interface JobSubmission {
  inputs: Record<string, unknown>;
  params: Record<string, unknown>;
  metadata: Record<string, unknown>;
  plan: string;
  limits: JobLimits;
  submittedBy: string;
}

/** State of one job, folded from its events by `evolve`. */
export interface JobState extends JobSubmission {
  id: string;
  orgId: string;
  batchId: string | undefined;
  type: string;
  status: JobStatus;
  result: jobs.JobResult | undefined;
  cost: jobs.JobCost | undefined;
  error: jobs.JobError | undefined;
  createdAt: number;
  dispatchedAt: number | undefined;
  startedAt: number | undefined;
  completedAt: number | undefined;
}

/** What a caller asks the job aggregate to do. `now` is passed in so `decide` stays pure. */
export type JobCommand =
  | ({ type: "QueueJob"; jobId: string; orgId: string; batchId?: string; jobType: string; now: number } & JobSubmission)
  | { type: "DispatchJob"; now: number }
  | { type: "StartJob"; workerId: string; now: number }
  | { type: "CompleteJob"; result: jobs.JobResult; cost: jobs.JobCost; now: number }
  | { type: "FailJob"; error: jobs.JobError; now: number }
  | { type: "CancelJob"; now: number };
