import type { jobs } from "@renderbus/contracts";
import { validationError } from "@renderbus/errors";
import type { AsyncService } from "@renderbus/rpc";
import { getBatch } from "../batch/batch-view.js";
import { listBatches } from "../batch/list-batches.js";
import { submitBatch } from "../batch/submit-batch.js";
import type { JobsDeps } from "../deps.js";
import { cancelJob, completeJob, failJob, startJob } from "../job/job-commands.js";
import { readJob } from "../job/read-job.js";
import { listJobTypes } from "../job-types/list-job-types.js";
import { listJobs } from "../list-jobs/list-jobs.js";
import { submitJob } from "../submit-job/submit-job.js";
import { holdJob } from "../watchdog/job-holds.js";

const requireId = (value: string, field: string) => {
  if (!value) throw validationError(`${field}: is required`);
  return value;
};

/**
 * The gRPC `Jobs` service. Client-facing methods act for the org in the caller's auth context (another org's ids
 * are NOT_FOUND); worker reports (StartJob, CompleteJob, FailJob, HoldJob) are internal, carry no auth context, and are
 * accepted from the worker's call token only (libs/rpc callers.ts).
 */
export function jobsRpc(deps: JobsDeps): AsyncService<jobs.JobsServer> {
  return {
    submitJob: async (request, context) => submitJob(deps, context.requireAuth(), request),
    getJob: async (request, context) => readJob(deps.db, requireId(request.jobId, "jobId"), context.requireAuth().orgId),
    listJobs: async (request, context) => listJobs(deps.db, context.requireAuth().orgId, request),
    cancelJob: async (request, context) => cancelJob(deps, context.requireAuth().orgId, requireId(request.jobId, "jobId")),
    submitBatch: async (request, context) => submitBatch(deps, context.requireAuth(), request),
    getBatch: async (request, context) => getBatch(deps.db, context.requireAuth().orgId, requireId(request.batchId, "batchId")),
    listBatches: async (request, context) => listBatches(deps.db, context.requireAuth().orgId, request),
    listJobTypes: async () => listJobTypes(deps.plans),
    startJob: async (request) => ({ job: await startJob(deps, { ...request, jobId: requireId(request.jobId, "jobId") }) }),
    completeJob: async (request) => ({ job: await completeJob(deps, { ...request, jobId: requireId(request.jobId, "jobId") }) }),
    failJob: async (request) => ({ job: await failJob(deps, { ...request, jobId: requireId(request.jobId, "jobId") }) }),
    holdJob: async (request) => {
      await holdJob(deps.db, requireId(request.jobId, "jobId"), deps.holds);
      return {};
    },
  };
}
