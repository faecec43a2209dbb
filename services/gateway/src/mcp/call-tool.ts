import type { FastifyReply, FastifyRequest } from "fastify";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
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
  const { auth, request, reply, deps } = context;
  try {
    await countAgainstPlanLimit(auth, context);
    const split = splitToolArguments(tool, args);
    const { route } = tool;
    const params = parseRequestPart(route.params, split.params, "path");
    const query = parseRequestPart(route.query, split.query, "query");
    const body = parseRequestPart(route.body, split.body, "body");
    const result = await route.handler({ body, query, params, auth, request: requestWithIdempotencyKey(request, split.idempotencyKey), reply }, deps);
    const structured = (result ?? { data: null }) as Record<string, unknown>;
    return { content: [{ type: "text", text: JSON.stringify(structured) }], structuredContent: structured };
  } catch (error) {
    const appError = error instanceof AppError ? error : toAppError(error);
    if (appError.code === "INTERNAL_ERROR") deps.logger.error({ err: error, requestId: request.id, tool: tool.name }, "mcp tool failed");
    else deps.logger.info({ requestId: request.id, orgId: auth.orgId, tool: tool.name, code: appError.code }, "mcp tool error");
    return toolError(appError);
  }
}

/** A tool error carrying the REST error code and message (and the REST error body as structured content). */
export function toolError(error: AppError): CallToolResult {
  const body = error.toBody();
  const retryAfter = typeof error.details?.retryAfterSeconds === "number" ? ` (retry after ${error.details.retryAfterSeconds} s)` : "";
  return { isError: true, content: [{ type: "text", text: `${error.code}: ${error.message}${retryAfter}` }], structuredContent: body };
}

/**
 * Counts the call against the org's per-minute budget, the same counter REST requests use (docs/concepts.md, "Rate limits": API keys
 * and OAuth tokens, REST and MCP alike). Only tool calls count: the protocol's own chatter (initialize, tools/list)
 * is not an API request.
 */
function countAgainstPlanLimit(auth: AuthContext, { reply, deps }: ToolCallContext): Promise<void> {
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
