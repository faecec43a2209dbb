import type { FastifyReply, FastifyRequest } from "fastify";
import type { z } from "zod";
import { noBody, noQuery } from "../routes/schemas.js";
import type { ErrorCode } from "@renderbus/errors";
import type { AuthContext } from "@renderbus/rpc";
import type { GatewayDeps } from "../deps.js";
import type { ResponseBody } from "../routes/response-schemas.js";

/** What a route handler receives: validated input and the resolved auth context. */
export interface RouteInput<Body, Query, Params> {
  body: Body;
  query: Query;
  params: Params;
  auth: AuthContext;
  request: FastifyRequest;
  reply: FastifyReply;
}

/**
 * One route of the public API. This table is the single description of the API: it drives request validation,
 * the response schemas (checked on every response in tests), the OpenAPI document, the MCP tools' input and output
 * schemas and, through /openapi.json, the SDK's types, so none of them can drift from the others.
 */
export interface RouteDefinition<Body = any, Query = any, Params = any> {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  /** Fastify path syntax: `/jobs/:jobId`. */
  url: string;
  /** Stable operation name; the MCP tool name is its snake_case form unless `mcpTool` says otherwise. */
  operationId: string;
  summary: string;
  description: string;
  tag: string;
  /** Left out: the route takes no body ({@link noBody}: absent or `{}`); GET routes ignore bodies. */
  body?: z.ZodType<Body>;
  /** Left out: the route takes no query parameters ({@link noQuery}: any parameter is a 400). */
  query?: z.ZodType<Query>;
  params?: z.ZodType<Params>;
  successStatus?: 200 | 201;
  /** The success body: `one("Job")`, `list("ApiKey")` or `page("Job")` (routes/response-schemas.ts). */
  response: ResponseBody;
  /** Error codes this route can answer with (documented in OpenAPI; UNAUTHORIZED/RATE_LIMITED/INTERNAL are implied). */
  errors: ErrorCode[];
  /** Largest body in bytes, when this route takes more than the gateway's 1 MB (app.ts BODY_LIMIT). */
  bodyLimit?: number;
  /** false: no automatic HEAD twin of this GET route (another handler owns HEAD on the same path). */
  exposeHead?: false;
  /** MCP tool name, or false for routes that make no sense as a tool (streams, downloads). */
  mcpTool?: string | false;
  /**
   * What the method alone does not say about the route's effects, for the MCP tool annotations (docs/mcp.md,
   * "Tools are the route table"). Left out: GET reads only; DELETE is destructive and idempotent; a route that takes
   * an Idempotency-Key is idempotent; nothing reaches outside Renderbus.
   */
  effects?: RouteEffects;
  /** The route creates a job or a batch that an MCP client may follow as a task (docs/mcp.md, "Tasks"). */
  mcpTask?: "job" | "batch";
  /** Returns the response body (`{data}` or `{data, nextCursor}`); throw AppError for failures. */
  handler(input: RouteInput<Body, Query, Params>, deps: GatewayDeps): Promise<unknown>;
}

/** Effects of a route beyond its method (see {@link RouteDefinition.effects}). */
export interface RouteEffects {
  /** It may delete or overwrite something that cannot be had back (revoke, cancel, replace a setting). */
  destructive?: boolean;
  /** Calling it again with the same arguments changes nothing more. */
  idempotent?: boolean;
  /** It reaches outside Renderbus: downloads inputs from URLs, sends requests to the org's webhook URL. */
  openWorld?: boolean;
}

/**
 * A route of the table, with the request parts it leaves out made strict (docs/concepts.md#errors: unknown fields are a 400):
 * no query schema means no query parameters, no body schema on a POST/PATCH/DELETE means an absent or empty body.
 * Validation, the OpenAPI document and the MCP tools all read these schemas, so they agree on it.
 */
export function defineRoute<Body = undefined, Query = undefined, Params = undefined>(
  route: RouteDefinition<Body, Query, Params>,
): RouteDefinition<Body, Query, Params> {
  return {
    ...route,
    query: route.query ?? (noQuery as unknown as z.ZodType<Query>),
    ...(route.body === undefined && route.method !== "GET" ? { body: noBody as unknown as z.ZodType<Body> } : {}),
  };
}
