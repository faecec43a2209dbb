import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { Ajv2020, type ValidateFunction } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import type { Logger } from "@renderbus/telemetry";
import type { OpenApiDocument } from "../openapi/openapi-document.js";
import { openApiPath } from "../openapi/openapi-document.js";

// ajv-formats is CommonJS: its default export arrives wrapped under ESM with NodeNext resolution.
const addFormats = ((addFormatsModule as unknown as { default?: unknown }).default ?? addFormatsModule) as (ajv: Ajv2020) => Ajv2020;

/** The id the document's named schemas are registered under; operation schemas refer to them through it. */
const DOCUMENT_ID = "urn:renderbus:openapi";

interface DocumentedResponse {
  content?: Record<string, { schema?: unknown }>;
}

type Operations = Record<string, { responses?: Record<string, DocumentedResponse> }>;

/** What one documented operation may answer: its JSON body's validator per HTTP status. */
type StatusValidators = Map<string, ValidateFunction | "not-json">;

/** A response that does not match the document: what the client would have received, and why it is wrong. */
export interface ResponseMismatch {
  method: string;
  path: string;
  status: number;
  problem: string;
}

/**
 * Checks responses against `/openapi.json`: for every documented operation and each status it documents, a validator
 * of the JSON body (the route's `response` for success, the error body otherwise). Used in tests
 * (GATEWAY_CHECK_RESPONSES, docs/operations.md) so every response the e2e suite sees is checked against its schema.
 */
export function responseChecker(document: Pick<OpenApiDocument, "paths" | "components">) {
  const ajv = new Ajv2020({ allErrors: false, strict: false, validateFormats: true });
  addFormats(ajv);
  ajv.addSchema({ $id: DOCUMENT_ID, components: { schemas: document.components.schemas } });
  const rebase = (schema: unknown) => JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', `"${DOCUMENT_ID}#/components/`)) as object;

  // Most operations share their error bodies: compile each distinct schema once.
  const compiled = new Map<string, ValidateFunction>();
  const compile = (schema: unknown) => {
    const key = JSON.stringify(schema);
    if (!compiled.has(key)) compiled.set(key, ajv.compile(rebase(schema)));
    return compiled.get(key)!;
  };
  const operations = new Map<string, StatusValidators>();
  for (const [path, byMethod] of Object.entries(document.paths as Record<string, Operations>)) {
    for (const [method, operation] of Object.entries(byMethod)) {
      const validators: StatusValidators = new Map();
      for (const [status, response] of Object.entries(operation.responses ?? {})) {
        const json = response.content?.["application/json"];
        validators.set(status, json?.schema ? compile(json.schema) : "not-json");
      }
      operations.set(`${method.toUpperCase()} ${path}`, validators);
    }
  }

  /** The problem with one response of a documented operation, or undefined when it matches (or is not JSON). */
  return function check(method: string, path: string, status: number, contentType: string | undefined, body: string): string | undefined {
    const validators = operations.get(`${method} ${path}`);
    if (!validators) return undefined;
    const validate = validators.get(String(status));
    if (validate === undefined) return `status ${status} is not documented for ${method} ${path} (documented: ${[...validators.keys()].join(", ")})`;
    const isJson = /^application\/json\b/.test(contentType ?? "");
    if (validate === "not-json") return isJson ? `status ${status} of ${method} ${path} is documented without a JSON body, but one was sent` : undefined;
    if (!isJson) return `status ${status} of ${method} ${path} should be application/json, was ${contentType ?? "no content type"}`;
    let value: unknown;
    try {
      value = JSON.parse(body);
    } catch {
      return `status ${status} of ${method} ${path}: the body is not JSON`;
    }
    if (validate(value)) return undefined;
    return `status ${status} of ${method} ${path}: ${ajv.errorsText(validate.errors, { dataVar: "body" })}`;
  };
}

/**
 * In test mode: an `onSend` hook that checks each response of a documented operation against its schema and, when it
 * does not match, logs the mismatch at error level and replaces the response with a 500 INTERNAL_ERROR naming it, so
 * the test that made the request fails loudly instead of passing on a body clients were promised otherwise.
 * Streams, downloads and hijacked replies (MCP's JSON-RPC) are not JSON bodies of ours and pass unchecked.
 */
export function registerResponseCheck(app: FastifyInstance, document: Pick<OpenApiDocument, "paths" | "components">, logger: Logger, onMismatch?: (mismatch: ResponseMismatch) => void): void {
  const check = responseChecker(document);
  app.addHook("onSend", async (request: FastifyRequest, reply: FastifyReply, payload: unknown) => {
    const routeUrl = request.routeOptions.url;
    if (routeUrl === undefined || request.method === "HEAD" || typeof payload !== "string") return payload;
    const path = openApiPath(routeUrl);
    const contentType = reply.getHeader("content-type");
    const problem = check(request.method, path, reply.statusCode, typeof contentType === "string" ? contentType : undefined, payload);
    if (problem === undefined) return payload;
    const mismatch = { method: request.method, path, status: reply.statusCode, problem };
    logger.error({ requestId: request.id, ...mismatch, body: payload.slice(0, 2_000) }, "response does not match its documented schema");
    onMismatch?.(mismatch);
    reply.code(500).type("application/json; charset=utf-8");
    return JSON.stringify({ error: { code: "INTERNAL_ERROR", message: `Response does not match its documented schema (GATEWAY_CHECK_RESPONSES): ${problem}` } });
  });
}
