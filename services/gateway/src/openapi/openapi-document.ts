import { z } from "zod";
import { ERROR_CODES, type ErrorCode } from "@renderbus/errors";
import type { RouteDefinition } from "../http/route.js";
import { apiRoutes } from "../routes/index.js";

const IMPLIED_ERRORS: ErrorCode[] = ["UNAUTHORIZED", "RATE_LIMITED", "INTERNAL_ERROR", "SERVICE_UNAVAILABLE"];

const jsonSchema = (schema: z.ZodType, io: "input" | "output" = "input") =>
  z.toJSONSchema(schema, { io, unrepresentable: "any", target: "draft-2020-12" }) as Record<string, unknown>;

/** `/jobs/:jobId` -> `/jobs/{jobId}` */
const openApiPath = (url: string) => url.replace(/:([A-Za-z]+)/g, "{$1}");

function parametersOf(route: RouteDefinition) {
  const parameters: Record<string, unknown>[] = [];
  for (const [location, schema] of [["path", route.params], ["query", route.query]] as const) {
    if (!schema) continue;
    const properties = (jsonSchema(schema).properties ?? {}) as Record<string, Record<string, unknown>>;
    const required = new Set((jsonSchema(schema).required as string[] | undefined) ?? []);
    for (const [name, property] of Object.entries(properties)) {
      parameters.push({ name, in: location, required: location === "path" || (required.has(name) && property.default === undefined), schema: property, ...(property.description ? { description: property.description } : {}) });
    }
  }
  if (route.operationId === "submitJob" || route.operationId === "submitBatch") {
    parameters.push({ name: "Idempotency-Key", in: "header", required: false, schema: { type: "string", maxLength: 255 }, description: "Reuse on retry: a repeat within 24 h replays the first response." });
  }
  return parameters;
}

function responsesOf(route: RouteDefinition) {
  const responses: Record<string, unknown> = {
    [String(route.successStatus ?? 200)]: { description: "Success", content: { "application/json": { schema: { type: "object", properties: { data: {} }, required: ["data"] } } } },
  };
  const byStatus = new Map<number, ErrorCode[]>();
  for (const code of [...route.errors, ...IMPLIED_ERRORS]) {
    const status = ERROR_CODES[code];
    byStatus.set(status, [...(byStatus.get(status) ?? []), code]);
  }
  for (const [status, codes] of byStatus) {
    responses[String(status)] = { description: codes.join(", "), content: { "application/json": { schema: { $ref: "#/components/schemas/Error" } } } };
  }
  return responses;
}

/** The OpenAPI 3.1 document, generated from the same route table that validates requests and defines MCP tools. */
export function buildOpenApiDocument(serverUrl: string, routes: RouteDefinition[] = apiRoutes) {
  const paths: Record<string, Record<string, unknown>> = {};
  for (const route of routes) {
    const path = openApiPath(route.url);
    paths[path] ??= {};
    paths[path]![route.method.toLowerCase()] = {
      operationId: route.operationId,
      summary: route.summary,
      description: route.description,
      tags: [route.tag],
      security: [{ apiKey: [] }, { session: [] }],
      parameters: parametersOf(route),
      ...(route.body ? { requestBody: { required: true, content: { "application/json": { schema: jsonSchema(route.body) } } } } : {}),
      responses: responsesOf(route),
    };
  }
  return {
    openapi: "3.1.0",
    info: { title: "Renderbus API", version: "1.0.0", description: "Asynchronous media jobs, with signed, retried webhooks." },
    servers: [{ url: serverUrl }],
    paths,
    components: {
      securitySchemes: {
        apiKey: { type: "http", scheme: "bearer", description: "An API key: Authorization: Bearer rb_..." },
        session: { type: "apiKey", in: "cookie", name: "rb_session" },
      },
      schemas: {
        Error: {
          type: "object",
          required: ["error"],
          properties: { error: { type: "object", required: ["code", "message"], properties: { code: { type: "string", enum: Object.keys(ERROR_CODES) }, message: { type: "string" } } } },
        },
      },
    },
  };
}
