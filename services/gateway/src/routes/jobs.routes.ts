import { JOB_STATUSES } from "@renderbus/job-types";
import { z } from "zod";
import { MAX_BATCH_SIZE } from "@renderbus/plans";
import { notFound } from "@renderbus/errors";
import type { jobs } from "@renderbus/contracts";
import type { AuthContext } from "@renderbus/rpc";
import type { GatewayDeps } from "../deps.js";
import { defineRoute } from "../http/route.js";
import { list, one, page } from "./response-schemas.js";
import { presentBatch, presentJob } from "../present/present.js";
import { cursorQuery, idempotencyKeyHeader, jobSpec } from "./schemas.js";
import { parseRequestPart } from "../http/validation.js";
import { checkUploadInputs } from "../uploads/upload-inputs.js";
import { jobWaitsOf } from "../jobs-wait/job-waits.js";

/** `GET /jobs/{id}/wait` (MCP `wait_for_job`): the longest and the default wait (docs/mcp.md, "Long jobs"). */
export const MAX_WAIT_SECONDS = 60;
export const DEFAULT_WAIT_SECONDS = 30;

// Named after the header, so a refusal names it: "Idempotency-Key: must be printable ASCII without spaces".
const idempotencyKeyPart = z.strictObject({ "Idempotency-Key": idempotencyKeyHeader });
const idempotencyKeyOf = (headers: Record<string, unknown>): string | undefined =>
  parseRequestPart(idempotencyKeyPart, { "Idempotency-Key": headers["idempotency-key"] }, "body")["Idempotency-Key"];

/** How long an upload a job names is kept from the submission on (UPLOAD_KEEP_AFTER_USE_HOURS). */
const uploadKeepMs = (deps: GatewayDeps) => deps.config.UPLOAD_KEEP_AFTER_USE_HOURS * 3_600_000;

const IDEMPOTENCY_NOTE =
  " Send an Idempotency-Key header (or idempotencyKey argument) and reuse the same key when retrying: a repeat within 24 h returns the first response instead of creating another job.";

const QUEUE_CAP_NOTE =
  " 403 PLAN_LIMIT when the org's jobs waiting for a slot would exceed its plan's cap (by default free 100, starter 1,000, pro 10,000, scale 50,000); a batch is then refused whole.";

/**
 * The job as `GET /jobs/{jobId}` shows it. `wait_for_job` and the MCP tasks (src/mcp/mcp-tasks.ts) answer through
 * this too, so whatever GET shows of a job (its progress while running, say) they show the same way.
 */
export async function jobView(deps: GatewayDeps, auth: AuthContext, jobId: string) {
  const job = await deps.finishedJobs.read(auth.orgId, jobId, () => deps.jobs.getJob({ jobId }, { auth }));
  return presentJob(job, deps.jobProgress?.get(auth.orgId, job.id));
}

export const jobRoutes = [
  defineRoute({
    method: "POST",
    url: "/jobs",
    operationId: "submitJob",
    summary: "Submit a job",
    description: `Queues an asynchronous media job. Returns the job (status waiting).${QUEUE_CAP_NOTE}${IDEMPOTENCY_NOTE}`,
    tag: "jobs",
    successStatus: 201,
    body: jobSpec,
    // Inputs are downloaded from the URLs given.
    effects: { openWorld: true },
    mcpTask: "job",
    errors: ["VALIDATION_ERROR", "INVALID_JOB_TYPE", "PLAN_LIMIT", "INSUFFICIENT_CREDITS", "IDEMPOTENCY_KEY_REUSED", "CONFLICT"],
    response: one("Job"),
    handler: async ({ body, auth, request, reply }, deps) => {
      const idempotencyKey = idempotencyKeyOf(request.headers);
      await checkUploadInputs(deps, auth.orgId, [body], () => "", { keepMs: uploadKeepMs(deps) });
      const response = await deps.jobs.submitJob({ job: body, ...(idempotencyKey ? { idempotencyKey } : {}) }, { auth });
      if (response.replayed) reply.header("Idempotent-Replayed", "true");
      return { data: presentJob(response.job!) };
    },
  }),
  defineRoute({
    method: "GET",
    url: "/jobs",
    operationId: "listJobs",
    summary: "List jobs",
    description: "The org's jobs, newest first, filtered and cursor paginated (pass nextCursor back as cursor).",
    tag: "jobs",
    query: z.strictObject({
      status: z.enum(JOB_STATUSES).optional(),
      type: z.string().min(1).max(64).optional(),
      batchId: z.string().min(1).max(100).optional(),
      createdAfter: z.coerce.number().int().nonnegative().optional().describe("epoch ms"),
      createdBefore: z.coerce.number().int().nonnegative().optional().describe("epoch ms"),
      ...cursorQuery,
    }),
    errors: ["VALIDATION_ERROR"],
    response: page("Job"),
    handler: async ({ query, auth }, deps) => {
      const page = await deps.jobs.listJobs(query, { auth });
      return { data: page.jobs.map((job) => presentJob(job, deps.jobProgress?.get(auth.orgId, job.id))), nextCursor: page.nextCursor ?? null };
    },
  }),
  defineRoute({
    method: "GET",
    url: "/jobs/:jobId",
    operationId: "getJob",
    summary: "Get a job",
    description: "The job with its status, result (signed download URL), cost, error, timing, live progress while running (percent, ETA) and webhook deliveries.",
    tag: "jobs",
    params: z.strictObject({ jobId: z.string().min(1).max(100) }),
    errors: ["NOT_FOUND"],
    response: one("Job"),
    handler: async ({ params, auth }, deps) => ({ data: await jobView(deps, auth, params.jobId) }),
  }),
  defineRoute({
    method: "GET",
    url: "/jobs/:jobId/wait",
    operationId: "waitForJob",
    summary: "Wait for a job",
    description:
      `Holds the request until the job is completed, failed or cancelled, or until timeoutSeconds (0-${MAX_WAIT_SECONDS}, default ${DEFAULT_WAIT_SECONDS}) have passed, then returns the job as GET /jobs/{jobId} does (a running job with its progress). Check status: call again while it is not terminal. A client's own request timeout must be longer than timeoutSeconds.`,
    tag: "jobs",
    params: z.strictObject({ jobId: z.string().min(1).max(100) }),
    query: z.strictObject({
      timeoutSeconds: z.coerce.number().int().min(0).max(MAX_WAIT_SECONDS).default(DEFAULT_WAIT_SECONDS).describe(`How long to wait at most, in seconds (0-${MAX_WAIT_SECONDS})`),
    }),
    errors: ["VALIDATION_ERROR", "NOT_FOUND"],
    response: one("Job"),
    handler: async ({ params, query, auth, reply }, deps) => {
      // The wait ends early when the client leaves (its socket closes) or the gateway shuts down.
      const gone = new AbortController();
      const onClose = () => gone.abort();
      reply.raw.once("close", onClose);
      try {
        await jobWaitsOf(deps).waitForJob(auth, params.jobId, query.timeoutSeconds * 1000, gone.signal);
        // Answered as GET /jobs/{jobId} answers (a finished job comes from the cache the wait just filled).
        return { data: await jobView(deps, auth, params.jobId) };
      } finally {
        reply.raw.off("close", onClose);
      }
    },
  }),
  defineRoute({
    method: "POST",
    url: "/jobs/:jobId/cancel",
    operationId: "cancelJob",
    summary: "Cancel a job",
    description: "Cancels a waiting, dispatched or running job (a running process stops within 2 s); no charge. 409 when already finished.",
    tag: "jobs",
    params: z.strictObject({ jobId: z.string().min(1).max(100) }),
    errors: ["NOT_FOUND", "CONFLICT"],
    response: one("Job"),
    // The job's work is lost; a second cancel changes nothing (409).
    effects: { destructive: true, idempotent: true },
    handler: async ({ params, auth }, deps) => ({ data: presentJob(await deps.jobs.cancelJob({ jobId: params.jobId }, { auth })) }),
  }),
  defineRoute({
    method: "POST",
    url: "/batches",
    operationId: "submitBatch",
    summary: "Submit a batch of jobs",
    description: `Validates every job first (all or nothing), checks credits once, and queues them as one batch.${QUEUE_CAP_NOTE}${IDEMPOTENCY_NOTE}`,
    tag: "batches",
    successStatus: 201,
    body: z.strictObject({ jobs: z.array(jobSpec).min(1).max(MAX_BATCH_SIZE) }),
    effects: { openWorld: true },
    mcpTask: "batch",
    errors: ["VALIDATION_ERROR", "INVALID_JOB_TYPE", "PLAN_LIMIT", "INSUFFICIENT_CREDITS", "IDEMPOTENCY_KEY_REUSED", "CONFLICT"],
    response: one("SubmittedBatch"),
    handler: async ({ body, auth, request }, deps) => {
      const idempotencyKey = idempotencyKeyOf(request.headers);
      await checkUploadInputs(deps, auth.orgId, body.jobs, (index) => `jobs[${index}].`, { keepMs: uploadKeepMs(deps) });
      const batch = await deps.jobs.submitBatch({ jobs: body.jobs, ...(idempotencyKey ? { idempotencyKey } : {}) }, { auth });
      return { data: { id: batch.id, jobCount: batch.jobCount, jobIds: batch.jobIds, status: batch.status } };
    },
  }),
  defineRoute({
    method: "GET",
    url: "/batches",
    operationId: "listBatches",
    summary: "List batches",
    description: "The org's batches, newest first, with counts per status; filter by status (running or completed) and cursor paginate (pass nextCursor back as cursor).",
    tag: "batches",
    query: z.strictObject({
      status: z.enum(["running", "completed"]).optional(),
      ...cursorQuery,
    }),
    errors: ["VALIDATION_ERROR"],
    response: page("Batch"),
    handler: async ({ query, auth }, deps) => {
      const page = await deps.jobs.listBatches(query, { auth });
      return { data: page.batches.map(presentBatch), nextCursor: page.nextCursor ?? null };
    },
  }),
  defineRoute({
    method: "GET",
    url: "/batches/:batchId",
    operationId: "getBatch",
    summary: "Get a batch",
    description: "Counts per status, status running or completed (every job terminal), timing.",
    tag: "batches",
    params: z.strictObject({ batchId: z.string().min(1).max(100) }),
    errors: ["NOT_FOUND"],
    response: one("Batch"),
    handler: async ({ params, auth }, deps) => ({ data: presentBatch(await deps.jobs.getBatch({ batchId: params.batchId }, { auth })) }),
  }),
  defineRoute({
    method: "GET",
    url: "/job-types",
    operationId: "listJobTypes",
    summary: "Job types",
    description: "Every job type with its inputs, params JSON Schema, plan availability and price rule.",
    tag: "jobs",
    errors: [],
    response: list("JobType"),
    handler: async ({ auth }, deps) => {
      const { jobTypes } = await deps.jobs.listJobTypes({}, { auth });
      return { data: jobTypes.map(presentJobType) };
    },
  }),
  defineRoute({
    method: "GET",
    url: "/job-types/:type",
    operationId: "getJobTypeSchema",
    summary: "One job type",
    description: "One job type with its inputs, params JSON Schema (what `params` of submit accepts), plan availability and price rule.",
    tag: "jobs",
    params: z.strictObject({ type: z.string().min(1).max(64).describe("Job type name, e.g. transcode") }),
    errors: ["NOT_FOUND"],
    response: one("JobType"),
    handler: async ({ params, auth }, deps) => {
      const { jobTypes } = await deps.jobs.listJobTypes({}, { auth });
      const jobType = jobTypes.find((candidate) => candidate.name === params.type);
      if (!jobType) throw notFound(`Job type ${params.type}`);
      return { data: presentJobType(jobType) };
    },
  }),
];

function presentJobType(type: jobs.JobType) {
  return {
    name: type.name,
    description: type.description,
    inputs: type.inputs,
    paramsSchema: type.paramsSchema ?? {},
    plans: type.plans,
    output: type.output,
    price: type.price,
  };
}
