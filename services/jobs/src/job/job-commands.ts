import type { jobs } from "@renderbus/contracts";
import { validationError } from "@renderbus/errors";
import type { JobsDeps } from "../deps.js";
import { isTerminal, type JobCommand, type JobState } from "./job.js";
import { runJobCommand } from "./job-store.js";
import { readJob } from "./read-job.js";

/**
 * Runs a command on an existing job, then asks the scheduler for a pass when the job left a concurrency slot
 * (terminal state), and returns the job as the API shows it.
 */
async function applyJobCommand(
  deps: JobsDeps,
  jobId: string,
  makeCommand: (state: JobState) => JobCommand,
  orgId?: string,
): Promise<jobs.Job> {
  const outcome = await runJobCommand(deps.db, jobId, makeCommand, orgId === undefined ? {} : { orgId });
  if (outcome.events.length > 0 && isTerminal(outcome.after.status)) deps.scheduler.requestPass(outcome.after.orgId, "slot-freed");
  return readJob(deps.db, jobId, orgId);
}

/**
 * CancelJob for the caller's org, from waiting, dispatched or running.
 * @throws AppError NOT_FOUND (unknown or another org's job), CONFLICT (already terminal).
 */
export const cancelJob = (deps: JobsDeps, orgId: string, jobId: string) =>
  applyJobCommand(deps, jobId, () => ({ type: "CancelJob", now: Date.now() }), orgId);

/** Worker report: the provider process started (dispatched -> running). CONFLICT once cancelled or terminal. */
export const startJob = (deps: JobsDeps, request: jobs.StartJobRequest) =>
  applyJobCommand(deps, request.jobId, () => ({ type: "StartJob", workerId: request.workerId, now: Date.now() }));

/** Worker report: the job finished with a result and its actual cost. Idempotent. */
export async function completeJob(deps: JobsDeps, request: jobs.CompleteJobRequest): Promise<jobs.Job> {
  if (!request.result) throw validationError("result: is required");
  const result = request.result;
  const cost = request.cost ?? { credits: 0, breakdown: "" };
  return applyJobCommand(deps, request.jobId, () => ({ type: "CompleteJob", result, cost, now: Date.now() }));
}

/** Worker report: the job failed with a job failure code (PROVIDER_ERROR, ...). Idempotent. */
export async function failJob(deps: JobsDeps, request: jobs.FailJobRequest): Promise<jobs.Job> {
  const error = request.error ?? { code: "PROVIDER_ERROR", message: "The provider failed" };
  return applyJobCommand(deps, request.jobId, () => ({ type: "FailJob", error, now: Date.now() }));
}
