import type { FastifyReply, FastifyRequest } from "fastify";
import { McpError, ErrorCode as JsonRpcErrorCode, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { AppError, toAppError } from "@renderbus/errors";
import type { AuthContext } from "@renderbus/rpc";
import type { GatewayDeps } from "../deps.js";
import { parseRequestPart } from "../http/validation.js";
import { spendRequestBudget } from "../auth/request-budget.js";
import { splitToolArguments, type McpTool } from "./mcp-tools.js";

/** What a tool call runs with: the HTTP request that carried it and the credential it resolved to. */
export interface ToolCallContext {
  auth: AuthContext;
  request: FastifyRequest;
  reply: FastifyReply;
  deps: GatewayDeps;
}

/**
 * Runs one tool call as its REST request: the same per-org rate limit, the same validation (path, query, body),
 * the same handler (so the same plan, credit and role checks downstream). Success is the REST body as JSON text
 * and as structured content; a failure is a tool error whose text starts with the REST error code.
 */
export async function callTool(tool: McpTool, args: Record<string, unknown> | undefined, context: ToolCallContext): Promise<CallToolResult> {
  try {
    return toolResult(await runTool(tool, args, context));
  } catch (error) {
    return toolError(logToolError(error, tool, context));
  }
}

/** The REST body of a tool call, or the AppError of its failure (thrown). */
export async function runTool(tool: McpTool, args: Record<string, unknown> | undefined, context: ToolCallContext): Promise<Record<string, unknown>> {
  const { auth, request, reply, deps } = context;
  await countAgainstPlanLimit(context);
  const split = splitToolArguments(tool, args);
  const { route } = tool;
  const params = parseRequestPart(route.params, split.params, "path");
  const query = parseRequestPart(route.query, split.query, "query");
  const body = parseRequestPart(route.body, split.body, "body");
  const result = await route.handler({ body, query, params, auth, request: requestWithIdempotencyKey(request, split.idempotencyKey), reply }, deps);
  return (result ?? { data: null }) as Record<string, unknown>;
}

/** A successful tool result: the REST body as structured content and as JSON text. */
export function toolResult(structured: Record<string, unknown>, isError = false): CallToolResult {
  return { content: [{ type: "text", text: JSON.stringify(structured) }], structuredContent: structured, ...(isError ? { isError } : {}) };
}

/** Logs a failed call (a bug at error level, an API error at info) and returns it as an AppError. */
export function logToolError(error: unknown, tool: Pick<McpTool, "name">, { auth, request, deps }: ToolCallContext): AppError {
  const appError = error instanceof AppError ? error : toAppError(error);
  if (appError.code === "INTERNAL_ERROR") deps.logger.error({ err: error, requestId: request.id, tool: tool.name }, "mcp tool failed");
  else deps.logger.info({ requestId: request.id, orgId: auth.orgId, tool: tool.name, code: appError.code }, "mcp tool error");
  return appError;
}

/** A tool error carrying the REST error code and message (and the REST error body as structured content). */
export function toolError(error: AppError): CallToolResult {
  const body = error.toBody();
  const retryAfter = typeof error.details?.retryAfterSeconds === "number" ? ` (retry after ${error.details.retryAfterSeconds} s)` : "";
  return { isError: true, content: [{ type: "text", text: `${error.code}: ${error.message}${retryAfter}` }], structuredContent: body };
}

/**
 * An API error where MCP wants a JSON-RPC error (task requests have no tool result to carry it): the message starts
 * with the REST error code, `data` is the REST error body. Unknown ids and bad arguments are InvalidParams (-32602),
 * as the MCP spec asks for an unknown task; the rest are InternalError (-32603).
 */
export function protocolErrorOf(error: AppError): McpError {
  const retryAfter = typeof error.details?.retryAfterSeconds === "number" ? ` (retry after ${error.details.retryAfterSeconds} s)` : "";
  const invalidParams = new Set<string>(["NOT_FOUND", "VALIDATION_ERROR", "INVALID_JOB_TYPE", "CONFLICT", "IDEMPOTENCY_KEY_REUSED"]);
  const code = invalidParams.has(error.code) ? JsonRpcErrorCode.InvalidParams : JsonRpcErrorCode.InternalError;
  return new McpError(code, `${error.code}: ${error.message}${retryAfter}`, error.toBody());
}

/**
 * Counts the call against the org's per-minute budget, the same counter REST requests use (docs/concepts.md, "Rate
 * limits": API keys and OAuth tokens, REST and MCP alike). Tool calls and task requests (tasks/get, tasks/result,
 * tasks/cancel: each reads or changes a job as a REST call would) count; the protocol's own chatter (initialize,
 * tools/list) is not an API request.
 */
export function countAgainstPlanLimit({ auth, reply, deps }: ToolCallContext): Promise<void> {
  return spendRequestBudget(auth, deps, (name, value) => {
    if (!reply.raw.headersSent) reply.raw.setHeader(name, value);
  });
}

/**
 * Route handlers read the idempotency key from the `Idempotency-Key` header; on MCP it is a tool argument, so the
 * handler sees a view of the request whose headers carry the argument (and never a header the client sent itself).
 */
function requestWithIdempotencyKey(request: FastifyRequest, idempotencyKey: string | undefined): FastifyRequest {
  const headers = { ...request.headers };
  delete headers["idempotency-key"];
  if (idempotencyKey !== undefined) headers["idempotency-key"] = idempotencyKey;
  return Object.create(request, { headers: { value: headers, enumerable: true } }) as FastifyRequest;
}
