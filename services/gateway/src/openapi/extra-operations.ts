import type { ErrorCode } from "@renderbus/errors";

/**
 * Public API routes that are not in the route table (`routes/index.ts`) because they stream or serve files. They are
 * described here so the OpenAPI document covers every public route of the gateway; `openapi-document.test.ts` fails
 * when a registered route is in neither place. Operational endpoints (`/healthz`, `/readyz`, `/metrics`, this
 * document and `/docs`) are not API: they are listed in docs/operations.md.
 */
export interface ExtraOperation {
  method: "get" | "post";
  /** OpenAPI path syntax. */
  path: string;
  operationId: string;
  summary: string;
  description: string;
  tag: string;
  /** false for unauthenticated routes. */
  authenticated: boolean;
  parameters?: Record<string, unknown>[];
  success: { status: number; description: string; content: Record<string, unknown> };
  errors: ErrorCode[];
}

const json = (schema: Record<string, unknown>) => ({ "application/json": { schema } });
const eventStream = { "text/event-stream": { schema: { type: "string", description: "Server-Sent Events" } } };

export const extraOperations: ExtraOperation[] = [
  {
    method: "get",
    path: "/jobs/{jobId}/events",
    operationId: "streamJobEvents",
    summary: "Stream a job's status changes",
    description:
      "Server-Sent Events: one event per status change (event name = the status, data = the job object), ending once the job is completed, failed or cancelled. A comment line is sent every 15 s to keep proxies from closing the stream.",
    tag: "jobs",
    authenticated: true,
    parameters: [{ name: "jobId", in: "path", required: true, schema: { type: "string" } }],
    success: { status: 200, description: "An event stream", content: eventStream },
    errors: ["NOT_FOUND", "VALIDATION_ERROR"],
  },
  {
    method: "get",
    path: "/webhooks/events/stream",
    operationId: "streamWebhookEvents",
    summary: "Stream the org's webhook payloads",
    description:
      "Server-Sent Events carrying every webhook payload of the caller's org as it happens (event name `webhook`, data `{id, event, body}` where body is the exact JSON a delivery would POST). Used by `renderbus webhooks listen` to forward deliveries to a local URL. Requires a plan with webhooks.",
    tag: "webhooks",
    authenticated: true,
    success: { status: 200, description: "An event stream", content: eventStream },
    errors: ["PLAN_LIMIT"],
  },
  {
    method: "get",
    path: "/outputs/{key}",
    operationId: "downloadOutput",
    summary: "Download a job output",
    description:
      "The `result.url` of a completed job: a signed, expiring link. The signature is the credential (no API key needed) until `expires`; outputs are kept for the retention period (7 days by default). With an S3 object store the answer may be a 302 redirect to a short-lived presigned URL of the store (docs/operations.md#object-storage): follow redirects.",
    tag: "jobs",
    authenticated: false,
    parameters: [
      { name: "key", in: "path", required: true, schema: { type: "string" }, description: "The output's storage key (may contain slashes)" },
      { name: "expires", in: "query", required: true, schema: { type: "integer" }, description: "Expiry, epoch milliseconds" },
      { name: "signature", in: "query", required: true, schema: { type: "string", pattern: "^[0-9a-f]{64}$" } },
    ],
    success: { status: 200, description: "The output file", content: { "application/octet-stream": { schema: { type: "string", contentMediaType: "application/octet-stream" } } } },
    errors: ["UNAUTHORIZED", "NOT_FOUND"],
  },
  {
    method: "post",
    path: "/mcp",
    operationId: "mcp",
    summary: "Model Context Protocol endpoint",
    description:
      "Streamable HTTP MCP server for AI agents (JSON-RPC 2.0). Tools map 1:1 to this API. Authenticate with an OAuth 2.1 access token or an API key as a bearer token; see docs/mcp.md. A browser request from another origin is refused with 403 FORBIDDEN.",
    tag: "mcp",
    authenticated: true,
    success: { status: 200, description: "A JSON-RPC response (JSON or an event stream)", content: { ...json({ type: "object" }), ...eventStream } },
    errors: ["VALIDATION_ERROR", "FORBIDDEN", "PAYLOAD_TOO_LARGE"],
  },
];
