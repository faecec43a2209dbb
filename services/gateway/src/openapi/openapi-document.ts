import { z } from "zod";
import { ERROR_CODES, type ErrorCode } from "@renderbus/errors";
import type { RouteDefinition } from "../http/route.js";
import { apiRoutes } from "../routes/index.js";
import { codeSamples, requestBodyExamples } from "./code-samples.js";
import { extraOperations, type ExtraOperation } from "./extra-operations.js";
import { responseBodySchema, responseSchemas } from "../routes/response-schemas.js";
import { webhookOperations, webhookPayloadSchemas } from "./webhook-payloads.js";

/** The API version the document carries (paths have no version prefix: docs/concepts.md). */
export const API_VERSION = "1.0.0";

const TAG_DESCRIPTIONS: Record<string, string> = {
  jobs: "Submit, list, follow and cancel jobs",
  batches: "Many jobs submitted and tracked as one",
  uploads: "Resumable file uploads (tus 1.0) to use as job inputs",
  "api-keys": "Org-scoped API keys",
  orgs: "The organization and its webhook target",
  billing: "Credits balance and usage ledger",
  account: "The resolved auth context",
  webhooks: "Delivery log, retries, test events and the live event stream",
  mcp: "Tools for AI agents",
};

/** Every authenticated route can answer these, whatever it does. */
const AUTHENTICATED_ERRORS: ErrorCode[] = ["UNAUTHORIZED", "RATE_LIMITED", "INTERNAL_ERROR", "SERVICE_UNAVAILABLE"];
const UNAUTHENTICATED_ERRORS: ErrorCode[] = ["INTERNAL_ERROR", "SERVICE_UNAVAILABLE"];

/** Example messages, so each documented error code shows what a client receives. */
const EXAMPLE_MESSAGES: Record<ErrorCode, string> = {
  UNAUTHORIZED: "Authentication is invalid or expired",
  FORBIDDEN: "Your role does not allow this",
  PLAN_LIMIT: "Webhooks are not included in the free plan",
  VALIDATION_ERROR: "params.crf: Too big: expected number to be <=51",
  INVALID_JOB_TYPE: "Unknown job type: transcode.gif",
  INSUFFICIENT_CREDITS: "Insufficient credits: 0 available, at least 1 needed",
  NOT_FOUND: "Job not found",
  CONFLICT: "Job job_01JD... is completed and cannot be cancelled",
  IDEMPOTENCY_KEY_REUSED: "Idempotency-Key was used with a different request body",
  RATE_LIMITED: "Rate limit exceeded: 10 requests per minute",
  PAYLOAD_TOO_LARGE: "Request body is larger than 1 MB",
  INTERNAL_ERROR: "Internal error",
  SERVICE_UNAVAILABLE: "A dependency is unavailable; retry later",
};

const jsonSchema = (schema: z.ZodType, io: "input" | "output" = "input") =>
  z.toJSONSchema(schema, { io, unrepresentable: "any", target: "draft-2020-12" }) as Record<string, unknown>;

/** `/jobs/:jobId` -> `/jobs/{jobId}` */
export const openApiPath = (url: string) => url.replace(/:([A-Za-z]+)/g, "{$1}");

function parametersOf(route: RouteDefinition) {
  const parameters: Record<string, unknown>[] = [];
  for (const [location, schema] of [["path", route.params], ["query", route.query]] as const) {
    if (!schema) continue;
    const document = jsonSchema(schema);
    const properties = (document.properties ?? {}) as Record<string, Record<string, unknown>>;
    const required = new Set((document.required as string[] | undefined) ?? []);
    for (const [name, property] of Object.entries(properties)) {
      parameters.push({ name, in: location, required: location === "path" || (required.has(name) && property.default === undefined), schema: property, ...(property.description ? { description: property.description } : {}) });
    }
  }
  if (route.operationId === "submitJob" || route.operationId === "submitBatch") {
    parameters.push({ name: "Idempotency-Key", in: "header", required: false, schema: { type: "string", maxLength: 255 }, description: "Reuse on retry: a repeat within 24 h replays the first response; the same key with a different body is 422." });
  }
  return parameters;
}

const requestIdHeader = { "X-Request-Id": { $ref: "#/components/headers/RequestId" } };
const rateLimitHeaders = {
  "RateLimit-Limit": { $ref: "#/components/headers/RateLimitLimit" },
  "RateLimit-Remaining": { $ref: "#/components/headers/RateLimitRemaining" },
  "RateLimit-Reset": { $ref: "#/components/headers/RateLimitReset" },
};

/** One response per HTTP status, listing every error code that maps to it, each with an example body. */
function errorResponses(codes: ErrorCode[], rateLimited: boolean) {
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of new Set(codes)) {
    const status = ERROR_CODES[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  const responses: Record<string, unknown> = {};
  for (const [status, statusCodes] of [...byStatus].sort(([a], [b]) => a - b)) {
    responses[String(status)] = {
      description: statusCodes.join(" or "),
      headers: { ...requestIdHeader, ...(status === 429 ? { "Retry-After": { $ref: "#/components/headers/RetryAfter" } } : {}), ...(rateLimited ? rateLimitHeaders : {}) },
      content: {
        "application/json": {
          schema: { $ref: "#/components/schemas/Error" },
          examples: Object.fromEntries(statusCodes.map((code) => [code, { value: { error: { code, message: EXAMPLE_MESSAGES[code] } } }])),
        },
      },
    };
  }
  return responses;
}

function routeErrors(route: RouteDefinition): ErrorCode[] {
  const errors: ErrorCode[] = [...route.errors, ...AUTHENTICATED_ERRORS];
  if (route.body || route.query || route.params) errors.push("VALIDATION_ERROR");
  if (route.body) errors.push("PAYLOAD_TOO_LARGE");
  return errors;
}

function routeOperation(route: RouteDefinition, serverUrl: string) {
  const path = openApiPath(route.url);
  const bodyExample = requestBodyExamples[route.operationId];
  return {
    operationId: route.operationId,
    summary: route.summary,
    description: route.description,
    tags: [route.tag],
    security: [{ apiKey: [] }, { session: [] }],
    parameters: parametersOf(route),
    // A route that takes no body accepts none at all, so its (empty, strict) body is not required.
    ...(route.body
      ? {
          requestBody: {
            required: !route.body.safeParse(undefined).success,
            content: { "application/json": { schema: jsonSchema(route.body), ...(bodyExample ? { examples: { example: { value: bodyExample } } } : {}) } },
          },
        }
      : {}),
    responses: {
      [String(route.successStatus ?? 200)]: {
        description: route.successStatus === 201 ? "Created" : "Success",
        headers: { ...requestIdHeader, ...rateLimitHeaders },
        content: { "application/json": { schema: responseBodySchema(route.response) } },
      },
      ...errorResponses(routeErrors(route), true),
    },
    ...(route.mcpTool !== false ? { "x-mcp-tool": route.mcpTool ?? route.operationId.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`) } : {}),
    "x-codeSamples": codeSamples({ operationId: route.operationId, method: route.method, path, authenticated: true }, serverUrl),
  };
}

function extraOperation(operation: ExtraOperation, serverUrl: string) {
  const errors = [...operation.errors, ...(operation.authenticated ? AUTHENTICATED_ERRORS : UNAUTHENTICATED_ERRORS)];
  const responses: Record<string, unknown> = {
    [String(operation.success.status)]: { description: operation.success.description, headers: { ...requestIdHeader, ...operation.success.headers }, content: operation.success.content },
    ...errorResponses(errors, operation.authenticated),
  };
  // Statuses of another protocol (tus) that carry one of our codes with a status of their own (docs/uploads.md).
  for (const { status, code, description, message } of operation.protocolErrors ?? []) {
    responses[String(status)] = {
      description: `${code}: ${description}`,
      // The status is the other protocol's, so not the one the code is tied to elsewhere.
      "x-protocol": "tus",
      headers: { ...requestIdHeader, ...(operation.authenticated ? rateLimitHeaders : {}) },
      content: { "application/json": { schema: { $ref: "#/components/schemas/Error" }, examples: { [code]: { value: { error: { code, message } } } } } },
    };
  }
  return {
    operationId: operation.operationId,
    summary: operation.summary,
    description: operation.description,
    tags: [operation.tag],
    security: operation.authenticated ? [{ apiKey: [] }, { session: [] }] : [],
    ...(operation.parameters ? { parameters: operation.parameters } : {}),
    responses,
    "x-codeSamples": codeSamples(
      { operationId: operation.operationId, method: operation.method, path: operation.path, authenticated: operation.authenticated, streams: "text/event-stream" in operation.success.content && operation.method === "get" },
      serverUrl,
    ),
  };
}

export type OpenApiDocument = ReturnType<typeof buildOpenApiDocument>;

/**
 * The OpenAPI 3.1 document, generated from the same route table that validates requests and defines MCP tools, plus
 * the streaming and infrastructure routes (extra-operations.ts) and the webhook payloads (`webhooks`).
 */
export function buildOpenApiDocument(serverUrl: string, routes: RouteDefinition[] = apiRoutes, extras: ExtraOperation[] = extraOperations) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = openApiPath(route.url);
    paths[path] ??= {};
    paths[path]![route.method.toLowerCase()] = routeOperation(route, serverUrl);
  }
  for (const operation of extras) {
    paths[operation.path] ??= {};
    paths[operation.path]![operation.method] = extraOperation(operation, serverUrl);
  }
  return {
    openapi: "3.1.0",
    info: {
      title: "Renderbus API",
      version: API_VERSION,
      summary: "Asynchronous media jobs, with signed, retried webhooks.",
      description:
        "Submit media jobs (transcode, thumbnail, captions, ...), follow them by polling, Server-Sent Events or webhooks. Success bodies are `{data: ...}`; errors are `{error: {code, message}}` with the codes listed in the `Error` schema. Timestamps are epoch milliseconds. Paths carry no version prefix; this document's `info.version` is the API version.\n\n" +
        "**Authentication.** Send an API key as `Authorization: Bearer rb_...` (scheme `apiKey`); the dashboard uses its session cookie (scheme `session`).\n\n" +
        "**Webhooks.** Renderbus POSTs the events listed under Webhooks to the org's `webhookUrl`, signed with `X-Renderbus-Signature: sha256=<hex HMAC-SHA256 of the raw body>` keyed with the org's webhook secret; verify it with `verifyWebhook` from `@renderbus/sdk`.",
      license: { name: "Apache-2.0", identifier: "Apache-2.0" },
    },
    servers: [{ url: serverUrl }],
    tags: [...new Set([...routes.map((route) => route.tag), ...extras.map((operation) => operation.tag)])].map((name) => ({ name, ...(TAG_DESCRIPTIONS[name] ? { description: TAG_DESCRIPTIONS[name] } : {}) })),
    paths,
    webhooks: webhookOperations,
    components: {
      securitySchemes: {
        apiKey: {
          type: "http",
          scheme: "bearer",
          bearerFormat: "rb_...",
          description:
            "An org-scoped API key sent as `Authorization: Bearer rb_...`. Create one in the dashboard (API keys) or with `POST /api-keys`; the full key is shown once. A revoked key answers 401 UNAUTHORIZED at once. The MCP endpoint also accepts an OAuth 2.1 access token here.",
        },
        session: { type: "apiKey", in: "cookie", name: "rb_session", description: "The dashboard session. State-changing requests also need Origin equal to the public URL's origin and the session's CSRF token (the rb_csrf cookie the gateway sets) in X-CSRF-Token" },
      },
      headers: {
        RequestId: { description: "Identifies the request in logs and support requests", schema: { type: "string" } },
        RetryAfter: { description: "Seconds to wait before retrying", schema: { type: "integer" } },
        RateLimitLimit: { description: "Requests allowed per minute for the org's plan", schema: { type: "integer" } },
        RateLimitRemaining: { description: "Requests left in the current window", schema: { type: "integer" } },
        RateLimitReset: { description: "Seconds until the window resets", schema: { type: "integer" } },
      },
      schemas: {
        Error: {
          type: "object",
          required: ["error"],
          properties: {
            error: {
              type: "object",
              required: ["code", "message"],
              properties: {
                code: { type: "string", enum: Object.keys(ERROR_CODES), description: "Stable machine-readable code; the HTTP status follows from it" },
                message: { type: "string", description: "Human-readable; names the field for VALIDATION_ERROR" },
              },
            },
          },
        },
        ...responseSchemas,
        ...webhookPayloadSchemas,
      },
    },
  };
}
