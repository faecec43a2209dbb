import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { McpServer } from "@modelcontextprotocol/sdk/server/mcp.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { CallToolRequestSchema, ListToolsRequestSchema, McpError, ErrorCode as JsonRpcErrorCode } from "@modelcontextprotocol/sdk/types.js";
import { AppError, toAppError } from "@renderbus/errors";
import type { AuthContext } from "@renderbus/rpc";
import type { GatewayDeps } from "../deps.js";
import type { RouteDefinition } from "../http/route.js";
import { sendError } from "../http/errors.js";
import { parseRequestPart } from "../http/validation.js";
import { noQuery } from "../routes/schemas.js";
import { buildMcpTools, type McpTool } from "./mcp-tools.js";
import { callTool } from "./call-tool.js";
import { createTask, registerTaskHandlers, TASK_CAPABILITIES } from "./mcp-tasks.js";
import {
  MCP_PATH,
  PROTECTED_RESOURCE_METADATA_PATH,
  assertAllowedOrigin,
  bearerChallenge,
  mcpResourceOf,
  resolveMcpCredential,
} from "./mcp-auth.js";
import { MCP_SCOPES } from "./scopes.js";
import { INLINE_UPLOAD_BODY_LIMIT } from "../uploads/uploads.routes.js";

/** Better Auth runs under `/auth` of the public URL, which makes `<PUBLIC_URL>/auth` the OAuth issuer. */
const AUTH_ISSUER_PATH = "/auth";
const SERVER_INFO = { name: "renderbus", title: "Renderbus", version: "0.1.0" };
const INSTRUCTIONS =
  "Renderbus runs asynchronous media jobs (transcode, thumbnail, audio.extract, extract.metadata, qr.generate, watermark.add, caption.burn). " +
  "Call list_job_types (or get_job_type_schema) for inputs and params, submit_job or submit_batch with an idempotencyKey you reuse on retries, " +
  "then call wait_for_job (it holds up to 60 s and returns the job, with its progress while running) until status is completed, failed or cancelled; " +
  "a completed job's result.url is a signed download link. Clients that support MCP tasks can run submit_job and submit_batch as tasks instead.";

/**
 * `/mcp`: the REST API as MCP tools over Streamable HTTP, stateless (no MCP session: every POST is authenticated on
 * its own, so any gateway replica can serve any request). Also serves the RFC 9728 protected-resource metadata
 * that points agents at the OAuth authorization server.
 */
export function registerMcpRoutes(app: FastifyInstance, deps: GatewayDeps, routes: RouteDefinition[]): void {
  const tools = buildMcpTools(routes);
  const toolsByName = new Map(tools.map((tool) => [tool.name, tool]));
  const listing = tools.map(({ name, title, description, inputSchema, outputSchema, annotations, execution }) => ({
    name,
    title,
    description,
    inputSchema,
    outputSchema,
    annotations,
    ...(execution ? { execution } : {}),
  }));

  // upload_media carries a file of up to 1 MB as base64 in its arguments (uploads.routes.ts).
  app.post(MCP_PATH, { bodyLimit: INLINE_UPLOAD_BODY_LIMIT + 64 * 1024 }, async (request, reply) => {
    // One JSON-RPC message per request (MCP 2025-06-18 dropped batches): the plan's request budget counts requests,
    // and a batch of 100 `tools/list` would get 100 answers for one.
    if (Array.isArray(request.body)) {
      return sendError(new AppError("VALIDATION_ERROR", "body: JSON-RPC batches are not accepted; send one message per request"), request, reply, deps.logger);
    }
    let auth: AuthContext;
    try {
      assertAllowedOrigin(request, deps);
      auth = await resolveMcpCredential(request, deps);
    } catch (error) {
      return sendMcpAuthError(error, request, reply, deps);
    }
    // The endpoint takes no query parameters; an unknown one is a 400, as on every REST route.
    try {
      parseRequestPart(noQuery, request.query, "query");
    } catch (error) {
      return sendError(error, request, reply, deps.logger);
    }
    const server = createServer(listing, toolsByName, { auth, request, reply, deps });
    // Stateless: no session id; JSON responses (a call answers once: wait_for_job and tasks/result hold, then answer).
    const transport = new StreamableHTTPServerTransport({ sessionIdGenerator: undefined, enableJsonResponse: true });
    reply.hijack();
    reply.raw.setHeader("X-Request-Id", request.id);
    reply.raw.on("close", () => {
      void transport.close();
      void server.close();
    });
    try {
      await server.connect(transport);
      await transport.handleRequest(request.raw, reply.raw, request.body);
    } catch (error) {
      deps.logger.error({ err: error, requestId: request.id }, "mcp request failed");
      if (!reply.raw.headersSent) {
        reply.raw.writeHead(500, { "content-type": "application/json" });
        reply.raw.end(JSON.stringify({ jsonrpc: "2.0", error: { code: JsonRpcErrorCode.InternalError, message: "Internal error" }, id: null }));
      }
    }
  });

  // Stateless server: no server-initiated stream (GET) and no session to end (DELETE).
  const methodNotAllowed = async (request: FastifyRequest, reply: FastifyReply) =>
    reply
      .status(405)
      .header("Allow", "POST")
      .send({ jsonrpc: "2.0", error: { code: JsonRpcErrorCode.ConnectionClosed, message: `${request.method} is not supported: this MCP server is stateless, use POST` }, id: null });
  app.get(MCP_PATH, methodNotAllowed);
  app.delete(MCP_PATH, methodNotAllowed);

  // RFC 9728: clients try the path-suffixed form first, then the root one; both describe `/mcp`.
  const metadata = async () => protectedResourceMetadata(deps);
  app.get(PROTECTED_RESOURCE_METADATA_PATH, metadata);
  app.get(`${PROTECTED_RESOURCE_METADATA_PATH}${MCP_PATH}`, metadata);
}

/** RFC 9728 metadata of the `/mcp` resource: which authorization server issues its tokens. */
export function protectedResourceMetadata(deps: GatewayDeps) {
  return {
    resource: mcpResourceOf(deps.config.PUBLIC_URL),
    // The issuer is Better Auth's base URL (its metadata is at /.well-known/oauth-authorization-server/auth).
    authorization_servers: [new URL(AUTH_ISSUER_PATH, deps.config.PUBLIC_URL).toString()],
    scopes_supported: MCP_SCOPES,
    bearer_methods_supported: ["header"],
    resource_name: "Renderbus MCP",
    resource_documentation: new URL("/docs", deps.config.PUBLIC_URL).toString(),
  };
}

/** One MCP server per HTTP request, bound to that request's credential (the SDK's stateless pattern). */
function createServer(
  listing: Array<Pick<McpTool, "name" | "title" | "description" | "inputSchema" | "outputSchema" | "annotations" | "execution">>,
  toolsByName: ReadonlyMap<string, McpTool>,
  context: Parameters<typeof callTool>[2],
): McpServer {
  const server = new McpServer(SERVER_INFO, { capabilities: { tools: { listChanged: false }, tasks: TASK_CAPABILITIES }, instructions: INSTRUCTIONS });
  // The tool list is generated from the route table, so the low-level handlers are used instead of registerTool
  // (which would validate arguments itself and answer without the REST error codes).
  server.server.setRequestHandler(ListToolsRequestSchema, () => ({ tools: listing }));
  server.server.setRequestHandler(CallToolRequestSchema, async (request) => {
    const tool = toolsByName.get(request.params.name);
    if (!tool) throw new McpError(JsonRpcErrorCode.InvalidParams, `Unknown tool ${request.params.name}`);
    // A client that asks for a task (`params.task`) gets one bound to the job or batch (docs/mcp.md, "Tasks").
    if (request.params.task) return createTask(tool, request.params.arguments, context);
    return callTool(tool, request.params.arguments, context);
  });
  registerTaskHandlers(server.server, context);
  return server;
}

function sendMcpAuthError(error: unknown, request: FastifyRequest, reply: FastifyReply, deps: GatewayDeps): FastifyReply {
  const appError = error instanceof AppError ? error : toAppError(error);
  if (appError.code !== "UNAUTHORIZED") return sendError(appError, request, reply, deps.logger);
  return reply
    .status(401)
    .header("WWW-Authenticate", bearerChallenge(deps.config.PUBLIC_URL, request.headers.authorization !== undefined))
    .send(appError.toBody());
}
