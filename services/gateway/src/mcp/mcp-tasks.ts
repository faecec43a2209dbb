import type { Server } from "@modelcontextprotocol/sdk/server/index.js";
import {
  CancelTaskRequestSchema,
  ErrorCode as JsonRpcErrorCode,
  GetTaskPayloadRequestSchema,
  GetTaskRequestSchema,
  McpError,
  RELATED_TASK_META_KEY,
  type CallToolResult,
  type CreateTaskResult,
  type Task,
} from "@modelcontextprotocol/sdk/types.js";
import { AppError, toAppError } from "@renderbus/errors";
import { planOf } from "@renderbus/plans";
import { presentBatch, presentJob } from "../present/present.js";
import { isTerminalStatus, jobWaitsOf, MAX_HELD_WAIT_MS } from "../jobs-wait/job-waits.js";
import { jobView } from "../routes/jobs.routes.js";
import type { McpTool } from "./mcp-tools.js";
import { countAgainstPlanLimit, logToolError, protocolErrorOf, runTool, toolResult, type ToolCallContext } from "./call-tool.js";

/** What the server declares: tasks for tools/call, tasks/cancel; no tasks/list (a task is a job or batch, listed by list_jobs / list_batches). */
export const TASK_CAPABILITIES = { cancel: {}, requests: { tools: { call: {} } } };
/** The shortest poll interval suggested to clients (docs/mcp.md, "Tasks"). */
export const MIN_TASK_POLL_INTERVAL_MS = 2_000;
/** How long one tasks/result holds at most before answering RequestTimeout (the client asks again). */
export const TASK_RESULT_MAX_WAIT_MS = MAX_HELD_WAIT_MS;

type PresentedJob = ReturnType<typeof presentJob> & { progress?: { percent?: number | null; updatedAt?: number | null } | null };
type PresentedBatch = ReturnType<typeof presentBatch>;
type TaskKind = "job" | "batch";

/**
 * MCP tasks for the tools whose route has `mcpTask` (submit_job, submit_batch), kept stateless like the rest of
 * `/mcp`: the task is the job or batch itself and its id is the job's or batch's id, so any gateway replica answers
 * tasks/get, tasks/result and tasks/cancel for it, and a task lives as long as its job. tasks/get reads it,
 * tasks/result waits (woken by job events) until it is terminal and returns it, tasks/cancel cancels it.
 */
export function registerTaskHandlers(server: Server, context: ToolCallContext): void {
  server.setRequestHandler(GetTaskRequestSchema, (request) =>
    asProtocolErrors(context, "tasks/get", async () => {
      await countAgainstPlanLimit(context);
      const taskId = request.params.taskId;
      const kind = kindOf(taskId);
      const interval = pollIntervalOf(context);
      return kind === "job" ? taskOfJob(await readJob(context, taskId), interval) : taskOfBatch(await readBatch(context, taskId), interval);
    }),
  );

  server.setRequestHandler(GetTaskPayloadRequestSchema, (request, extra) =>
    asProtocolErrors(context, "tasks/result", async () => {
      await countAgainstPlanLimit(context);
      const taskId = request.params.taskId;
      const kind = kindOf(taskId);
      const waits = jobWaitsOf(context.deps);
      const { auth } = context;
      let result: CallToolResult | undefined;
      if (kind === "job") {
        await waits.waitForJob(auth, taskId, TASK_RESULT_MAX_WAIT_MS, extra.signal);
        result = jobResult(await readJob(context, taskId));
      } else {
        result = batchResult(presentBatch(await waits.waitForBatch(auth, taskId, TASK_RESULT_MAX_WAIT_MS, extra.signal)));
      }
      if (!result) {
        if (waits.closed.aborted) throw new AppError("SERVICE_UNAVAILABLE", "The gateway is restarting; call tasks/result again");
        throw new McpError(JsonRpcErrorCode.RequestTimeout, `Task ${taskId} is still working; call tasks/result again`);
      }
      return { ...result, _meta: { [RELATED_TASK_META_KEY]: { taskId } } };
    }),
  );

  server.setRequestHandler(CancelTaskRequestSchema, (request) =>
    asProtocolErrors(context, "tasks/cancel", async () => {
      await countAgainstPlanLimit(context);
      const taskId = request.params.taskId;
      const kind = kindOf(taskId);
      return kind === "job" ? cancelJobTask(context, taskId) : cancelBatchTask(context, taskId);
    }),
  );
}

/**
 * tools/call with `task`: runs the submit as usual, then answers the task bound to the new job or batch. A tool
 * whose route has no `mcpTask` cannot run as a task (-32601, as the MCP spec asks); a refused submit is a JSON-RPC
 * error carrying the REST error code (a task request has no tool result to carry it).
 */
export async function createTask(tool: McpTool, args: Record<string, unknown> | undefined, context: ToolCallContext): Promise<CreateTaskResult> {
  const kind = tool.route.mcpTask;
  if (!kind) throw new McpError(JsonRpcErrorCode.MethodNotFound, `Tool ${tool.name} does not support tasks (execution.taskSupport is not set)`);
  let body: Record<string, unknown>;
  try {
    body = await runTool(tool, args, context);
  } catch (error) {
    throw protocolErrorOf(logToolError(error, tool, context));
  }
  const data = body.data as { id: string };
  const interval = pollIntervalOf(context);
  if (kind === "job") return { task: taskOfJob(data as PresentedJob, interval) };
  return { task: taskOfBatch(await readBatch(context, data.id), interval) };
}

/**
 * The poll interval suggested to this org: polling one task may use a third of the plan's requests per minute (free,
 * 10 a minute: every 18 s), never more often than every 2 s. tasks/result, one request held until the end, is the
 * cheaper way to wait.
 */
export function pollIntervalOf({ auth, deps }: Pick<ToolCallContext, "auth" | "deps">): number {
  const perMinute = planOf(auth.plan, deps.plans).requestsPerMinute;
  return Math.max(MIN_TASK_POLL_INTERVAL_MS, Math.ceil((3 * 60_000) / Math.max(1, perMinute)));
}

function kindOf(taskId: string): TaskKind {
  if (/^job_[\w-]{1,96}$/.test(taskId)) return "job";
  if (/^batch_[\w-]{1,94}$/.test(taskId)) return "batch";
  throw new AppError("NOT_FOUND", "Task not found");
}

/** The job as get_job shows it (GET /jobs/{jobId}). */
async function readJob(context: ToolCallContext, jobId: string): Promise<PresentedJob> {
  return jobView(context.deps, context.auth, jobId);
}

async function readBatch(context: ToolCallContext, batchId: string): Promise<PresentedBatch> {
  return presentBatch(await context.deps.jobs.getBatch({ batchId }, { auth: context.auth }));
}

const iso = (epochMs: number | null | undefined): string => new Date(epochMs ?? Date.now()).toISOString();
const latest = (...times: Array<number | null | undefined>): number | undefined => {
  const known = times.filter((time): time is number => typeof time === "number");
  return known.length > 0 ? Math.max(...known) : undefined;
};

/** A job as a task: waiting, dispatched and running are working; completed, failed and cancelled are themselves. */
export function taskOfJob(job: PresentedJob, pollIntervalMs = MIN_TASK_POLL_INTERVAL_MS): Task {
  const status = job.status === "completed" || job.status === "failed" || job.status === "cancelled" ? job.status : "working";
  const percent = job.progress?.percent;
  let statusMessage = `Job ${job.status}`;
  if (status === "working" && typeof percent === "number") statusMessage += `, ${Math.round(percent)}%`;
  if (job.error) statusMessage = `${job.error.code}: ${job.error.message}`;
  const { timing } = job;
  return {
    taskId: job.id,
    status,
    statusMessage,
    createdAt: iso(timing.createdAt),
    lastUpdatedAt: iso(latest(timing.createdAt, timing.dispatchedAt, timing.startedAt, timing.completedAt, job.progress?.updatedAt)),
    // Job and batch records are never pruned (docs/operations.md, "Data retention"): the task lasts as long as the job.
    ttl: null,
    ...(status === "working" ? { pollInterval: pollIntervalMs } : {}),
  };
}

/**
 * A batch as a task: working until every job is terminal, then failed if any job failed, cancelled if any was
 * cancelled (and none failed), completed when all completed.
 */
export function taskOfBatch(batch: PresentedBatch, pollIntervalMs = MIN_TASK_POLL_INTERVAL_MS): Task {
  const { counts } = batch;
  const finished = counts.completed + counts.failed + counts.cancelled;
  let status: Task["status"] = "working";
  if (batch.status === "completed") status = counts.failed > 0 ? "failed" : counts.cancelled > 0 ? "cancelled" : "completed";
  return {
    taskId: batch.id,
    status,
    statusMessage: `${finished} of ${batch.jobCount} jobs finished: ${counts.completed} completed, ${counts.failed} failed, ${counts.cancelled} cancelled`,
    createdAt: iso(batch.timing.createdAt),
    lastUpdatedAt: iso(latest(batch.timing.createdAt, batch.timing.completedAt)),
    ttl: null,
    ...(status === "working" ? { pollInterval: pollIntervalMs } : {}),
  };
}

/** The tool result of a finished job task (the job, as get_job returns it), or undefined while it runs. */
function jobResult(job: PresentedJob): CallToolResult | undefined {
  if (!isTerminalStatus(job.status)) return undefined;
  return toolResult({ data: job }, job.status !== "completed");
}

function batchResult(batch: PresentedBatch): CallToolResult | undefined {
  if (batch.status !== "completed") return undefined;
  return toolResult({ data: batch }, taskOfBatch(batch).status !== "completed");
}

async function cancelJobTask(context: ToolCallContext, jobId: string): Promise<Task> {
  const { deps, auth } = context;
  try {
    return taskOfJob(presentJob(await deps.jobs.cancelJob({ jobId }, { auth })), pollIntervalOf(context));
  } catch (error) {
    const appError = error instanceof AppError ? error : toAppError(error);
    if (appError.code !== "CONFLICT") throw appError;
    const job = await readJob(context, jobId);
    throw new McpError(JsonRpcErrorCode.InvalidParams, `Cannot cancel task in terminal status: ${taskOfJob(job).status}`, appError.toBody());
  }
}

/** Cancels every job of the batch that has not finished (a job that finishes meanwhile is left as it is). */
async function cancelBatchTask(context: ToolCallContext, batchId: string): Promise<Task> {
  const { deps, auth } = context;
  const batch = presentBatch(await deps.jobs.getBatch({ batchId }, { auth }));
  if (batch.status === "completed") throw new McpError(JsonRpcErrorCode.InvalidParams, `Cannot cancel task in terminal status: ${taskOfBatch(batch).status}`);
  const pending = [...batch.jobIds];
  const cancelOne = async (): Promise<void> => {
    for (let jobId = pending.shift(); jobId !== undefined; jobId = pending.shift()) {
      try {
        await deps.jobs.cancelJob({ jobId }, { auth });
      } catch (error) {
        const appError = error instanceof AppError ? error : toAppError(error);
        if (appError.code !== "CONFLICT") throw appError;
      }
    }
  };
  // A few at a time: a 1,000-job batch is cancelled without 1,000 calls in flight.
  await Promise.all(Array.from({ length: 8 }, cancelOne));
  // The batch's own counts follow the jobs' events; the answer says what was just done.
  return { ...taskOfBatch(batch), status: "cancelled", statusMessage: "Cancelled: every unfinished job of the batch was cancelled", lastUpdatedAt: iso(Date.now()) };
}

/** Runs a task request, turning API errors into JSON-RPC errors (an unknown or other org's id: "Task not found"). */
async function asProtocolErrors<T>(context: ToolCallContext, method: string, run: () => Promise<T>): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof McpError) throw error;
    const appError = logToolError(error, { name: method }, context);
    if (appError.code === "NOT_FOUND") throw new McpError(JsonRpcErrorCode.InvalidParams, "Task not found", appError.toBody());
    throw protocolErrorOf(appError);
  }
}
