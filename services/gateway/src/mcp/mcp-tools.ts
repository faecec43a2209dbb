import { z } from "zod";
import type { ErrorCode } from "@renderbus/errors";
import { validationError } from "@renderbus/errors";
import type { RouteDefinition } from "../http/route.js";
import { idempotencyKeyHeader } from "../routes/schemas.js";
import { responseBodySchema, standaloneSchema } from "../routes/response-schemas.js";

/** The argument of the submit tools that plays the part of the REST `Idempotency-Key` header. */
export const IDEMPOTENCY_ARGUMENT = "idempotencyKey";

type RequestPart = "params" | "query" | "body";

/** One MCP tool, generated from one route of the REST table. */
export interface McpTool {
  name: string;
  title: string;
  description: string;
  /** JSON Schema (draft 2020-12) of the arguments: the route's path params, query and body fields side by side. */
  inputSchema: { type: "object"; [key: string]: unknown };
  /**
   * JSON Schema of the structured result: the route's REST success body (its `response`), or, for a tool error, the
   * REST error body. Self-contained (named schemas under `$defs`), so MCP clients can validate results with it.
   */
  outputSchema: { type: "object"; [key: string]: unknown };
  annotations: ToolAnnotations;
  /** Set on tools a client may run as an MCP task (the route's `mcpTask`); absent means no task support. */
  execution?: { taskSupport: "optional" };
  route: RouteDefinition;
  /** Which request part each argument belongs to. */
  argumentParts: ReadonlyMap<string, RequestPart | "idempotencyKey">;
  /** A route whose body is not an object takes it whole under this argument. */
  wholeBodyArgument?: string;
}

/** The MCP tool annotations (hints for clients, never relied on for security). */
export interface ToolAnnotations {
  title: string;
  readOnlyHint: boolean;
  destructiveHint: boolean;
  idempotentHint: boolean;
  openWorldHint: boolean;
}

/**
 * The annotations of a route's tool, from the route table only: the method says most (GET reads, DELETE destroys
 * and can be repeated, an Idempotency-Key makes a submit repeatable) and `effects` says the rest.
 */
export function annotationsOf(route: Pick<RouteDefinition, "method" | "summary" | "errors" | "effects">): ToolAnnotations {
  const readOnly = route.method === "GET";
  const effects = route.effects ?? {};
  return {
    title: route.summary,
    readOnlyHint: readOnly,
    destructiveHint: !readOnly && (effects.destructive ?? route.method === "DELETE"),
    idempotentHint: readOnly || (effects.idempotent ?? (route.method === "DELETE" || acceptsIdempotencyKey(route))),
    openWorldHint: effects.openWorld ?? false,
  };
}

/** The arguments of one tool call, split back into the parts of the REST request. */
export interface SplitArguments {
  params: Record<string, unknown>;
  query: Record<string, unknown>;
  body: unknown;
  idempotencyKey?: string;
}

/** `submitJob` -> `submit_job`. */
export const snakeCaseOf = (operationId: string): string => operationId.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase();

/** The tool name of a route (`mcpTool`, else the snake_case operationId), or undefined for routes kept off MCP. */
export function toolNameOf(route: Pick<RouteDefinition, "operationId" | "mcpTool">): string | undefined {
  if (route.mcpTool === false) return undefined;
  return route.mcpTool ?? snakeCaseOf(route.operationId);
}

/** Routes that take an Idempotency-Key are the ones that can answer IDEMPOTENCY_KEY_REUSED. */
export const acceptsIdempotencyKey = (route: Pick<RouteDefinition, "errors">): boolean => route.errors.includes("IDEMPOTENCY_KEY_REUSED");

const IMPLIED_ERRORS: ErrorCode[] = ["UNAUTHORIZED", "RATE_LIMITED", "INTERNAL_ERROR"];

/**
 * Builds the MCP tools from the route table: one tool per route (unless `mcpTool: false`), with the route's
 * description, error codes and schemas. Throws at start-up when two routes would make the same tool or when a
 * path, query and body field share a name, so a bad route table never serves a half-working tool list.
 */
export function buildMcpTools(routes: RouteDefinition[]): McpTool[] {
  const tools: McpTool[] = [];
  const names = new Set<string>();
  for (const route of routes) {
    const name = toolNameOf(route);
    if (name === undefined) continue;
    if (names.has(name)) throw new Error(`MCP tool ${name} is defined by two routes`);
    names.add(name);
    tools.push(toolOf(route, name));
  }
  return tools;
}

function toolOf(route: RouteDefinition, name: string): McpTool {
  const shape: Record<string, z.ZodType> = {};
  const argumentParts = new Map<string, RequestPart | "idempotencyKey">();
  let wholeBodyArgument: string | undefined;
  const add = (key: string, schema: z.ZodType, part: RequestPart | "idempotencyKey") => {
    if (argumentParts.has(key)) throw new Error(`MCP tool ${name}: argument ${key} appears in two parts of ${route.method} ${route.url}`);
    argumentParts.set(key, part);
    shape[key] = schema;
  };
  for (const part of ["params", "query", "body"] as const) {
    // An optional body (a route that takes none: absent or `{}`) contributes its fields, like any object body.
    const schema = route[part] instanceof z.ZodOptional ? (route[part].unwrap() as z.ZodType) : route[part];
    if (!schema) continue;
    if (schema instanceof z.ZodObject) {
      for (const [key, field] of Object.entries(schema.shape as Record<string, z.ZodType>)) add(key, field, part);
    } else if (part === "body") {
      wholeBodyArgument = "body";
      add("body", schema, "body");
    } else {
      throw new Error(`MCP tool ${name}: ${part} of ${route.method} ${route.url} must be an object schema`);
    }
  }
  const idempotent = acceptsIdempotencyKey(route);
  if (idempotent) {
    add(
      IDEMPOTENCY_ARGUMENT,
      idempotencyKeyHeader.describe(
        "A unique key for this submission (e.g. a UUID). When you retry after a timeout or error, send the SAME key: a repeat within 24 h returns the first result instead of creating (and charging for) another job. Use a new key for a new submission.",
      ),
      "idempotencyKey",
    );
  }
  const jsonSchema = z.toJSONSchema(z.strictObject(shape), { io: "input", unrepresentable: "any", target: "draft-2020-12" }) as Record<string, unknown>;
  delete jsonSchema.$schema;
  const errors = [...new Set([...route.errors, ...IMPLIED_ERRORS])];
  const description = [
    route.description,
    idempotent ? `Always pass ${IDEMPOTENCY_ARGUMENT} and reuse the same value when retrying this call.` : "",
    route.mcpTask
      ? `Can run as an MCP task: the task is the ${route.mcpTask} (task id = its id); tasks/get follows it, tasks/result waits for it to finish and returns it, tasks/cancel cancels it.`
      : "",
    `REST: ${route.method} ${route.url}. Errors come back as tool errors whose text starts with the code: ${errors.join(", ")}.`,
  ]
    .filter(Boolean)
    .join("\n\n");
  return {
    name,
    title: route.summary,
    description,
    inputSchema: { ...jsonSchema, type: "object" },
    outputSchema: outputSchemaOf(route),
    annotations: annotationsOf(route),
    ...(route.mcpTask ? { execution: { taskSupport: "optional" as const } } : {}),
    route,
    argumentParts,
    ...(wholeBodyArgument ? { wholeBodyArgument } : {}),
  };
}

/** The REST error body, which a tool error carries as structured content (call-tool.ts). */
const ERROR_BODY = {
  type: "object",
  required: ["error"],
  properties: { error: { type: "object", required: ["code", "message"], properties: { code: { type: "string" }, message: { type: "string" } } } },
};

/**
 * A tool's output schema: the route's success body or the error body. MCP clients validate a tool error's structured
 * content against the output schema too, so it names both.
 */
function outputSchemaOf(route: RouteDefinition): McpTool["outputSchema"] {
  const { $defs, ...success } = standaloneSchema(responseBodySchema(route.response, "#/$defs/"));
  return { type: "object", oneOf: [success, ERROR_BODY], ...($defs ? { $defs } : {}) };
}

/**
 * Splits a tool call's arguments into the REST request parts. An argument no part knows is a VALIDATION_ERROR,
 * as an unknown body field is on REST.
 */
export function splitToolArguments(tool: McpTool, args: Record<string, unknown> | undefined): SplitArguments {
  const split: SplitArguments = { params: {}, query: {}, body: tool.route.body ? {} : undefined };
  const unknown: string[] = [];
  for (const [key, value] of Object.entries(args ?? {})) {
    const part = tool.argumentParts.get(key);
    if (part === undefined) unknown.push(key);
    else if (part === "idempotencyKey") {
      if (value !== undefined && value !== null) {
        if (typeof value !== "string") throw validationError(`${IDEMPOTENCY_ARGUMENT}: must be a string`);
        split.idempotencyKey = value;
      }
    } else if (part === "body" && tool.wholeBodyArgument === key) split.body = value;
    else if (part === "body") (split.body as Record<string, unknown>)[key] = value;
    else split[part][key] = value;
  }
  if (unknown.length > 0) throw validationError(`unknown argument${unknown.length > 1 ? "s" : ""} ${unknown.join(", ")}`);
  return split;
}
