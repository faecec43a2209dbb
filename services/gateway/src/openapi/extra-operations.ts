import type { ErrorCode } from "@renderbus/errors";

/**
 * Public API routes that are not in the route table (`routes/index.ts`) because they stream, serve files or speak
 * another protocol (tus at `/uploads`). They are
 * described here so the OpenAPI document covers every public route of the gateway; `openapi-document.test.ts` fails
 * when a registered route is in neither place. Operational endpoints (`/healthz`, `/readyz`, `/metrics`, this
 * document and `/docs`) are not API: they are listed in docs/operations.md.
 */
export interface ExtraOperation {
  method: "get" | "post" | "head" | "patch" | "delete";
  /** OpenAPI path syntax. */
  path: string;
  operationId: string;
  summary: string;
  description: string;
  tag: string;
  /** false for unauthenticated routes. */
  authenticated: boolean;
  parameters?: Record<string, unknown>[];
  success: { status: number; description: string; content: Record<string, unknown>; headers?: Record<string, unknown> };
  errors: ErrorCode[];
  /**
   * Answers whose status is another protocol's (tus), not the one docs/concepts.md#errors ties to the code; the body
   * is still `{error: {code, message}}` (docs/uploads.md, "Errors").
   */
  protocolErrors?: { status: number; code: ErrorCode; description: string; message: string }[];
}

const json = (schema: Record<string, unknown>) => ({ "application/json": { schema } });
const tusHeader = (name: string, description: string, required = true) => ({ name, in: "header", required, schema: { type: "string" }, description });
const TUS_RESUMABLE = tusHeader("Tus-Resumable", "The tus protocol version: 1.0.0");
const UPLOAD_ID = { name: "uploadId", in: "path", required: true, schema: { type: "string" }, description: "An upload_ id" };
const offsetHeader = { "Upload-Offset": { description: "Bytes received so far", schema: { type: "integer" } } };
/** tus 1.0: a request without `Tus-Resumable: 1.0.0` is 412 Precondition Failed. */
const TUS_VERSION_ERROR = [{ status: 412, code: "VALIDATION_ERROR" as const, description: "`Tus-Resumable` is missing or not 1.0.0 (tus' 412 Precondition Failed)", message: "Tus-Resumable: required, 1.0.0 (the tus protocol version)" }];
const TUS_NOTE = " Part of the tus 1.0 protocol (https://tus.io/protocols/resumable-upload): use a tus client (tus-js-client, the SDK's `client.uploads.upload`) rather than calling it by hand; see docs/uploads.md.";
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
    path: "/uploads",
    operationId: "createUpload",
    summary: "Create an upload (tus)",
    description:
      "Creates a resumable upload of `Upload-Length` bytes (at most the plan's max input size) and answers its URL in `Location`; the body may carry the first bytes (`Content-Type: application/offset+octet-stream`). The upload is kept 24 h by default; use its id as a job input once complete. An org keeps at most 10 times its plan's max input size of uploads at once (and 1,000 uploads): past that, 403 PLAN_LIMIT." + TUS_NOTE,
    tag: "uploads",
    authenticated: true,
    parameters: [TUS_RESUMABLE, tusHeader("Upload-Length", "The file's size in bytes", false), tusHeader("Upload-Defer-Length", "1 when the size is not known yet", false), tusHeader("Upload-Metadata", "Comma-separated `key base64(value)` pairs, e.g. filename", false)],
    success: { status: 201, description: "Created; `Location` is the upload's URL", content: {}, headers: { Location: { description: "The upload's URL", schema: { type: "string" } }, ...offsetHeader } },
    errors: ["VALIDATION_ERROR", "PAYLOAD_TOO_LARGE", "PLAN_LIMIT"],
    protocolErrors: TUS_VERSION_ERROR,
  },
  {
    method: "head",
    path: "/uploads/{uploadId}",
    operationId: "getUploadOffset",
    summary: "Get an upload's offset (tus)",
    description: "The bytes received so far (`Upload-Offset`) and the declared length (`Upload-Length`): where an interrupted upload resumes." + TUS_NOTE,
    tag: "uploads",
    authenticated: true,
    parameters: [UPLOAD_ID, TUS_RESUMABLE],
    success: { status: 200, description: "The upload's offset", content: {}, headers: { ...offsetHeader, "Upload-Length": { description: "Declared size", schema: { type: "integer" } } } },
    // A malformed or overlong id (or a percent-encoding that decodes to nothing) is 400 before tus sees it.
    errors: ["VALIDATION_ERROR", "NOT_FOUND"],
    protocolErrors: TUS_VERSION_ERROR,
  },
  {
    method: "patch",
    path: "/uploads/{uploadId}",
    operationId: "appendToUpload",
    summary: "Append to an upload (tus)",
    description: "Writes the body at `Upload-Offset`, which must equal the upload's current offset (409 otherwise). Send as many PATCH requests as you like: each counts once against the rate limit." + TUS_NOTE,
    tag: "uploads",
    authenticated: true,
    parameters: [UPLOAD_ID, TUS_RESUMABLE, tusHeader("Upload-Offset", "The upload's current offset")],
    success: { status: 204, description: "Written; `Upload-Offset` is the new offset", content: {}, headers: offsetHeader },
    errors: ["VALIDATION_ERROR", "NOT_FOUND", "CONFLICT", "PAYLOAD_TOO_LARGE"],
    protocolErrors: TUS_VERSION_ERROR,
  },
  {
    method: "delete",
    path: "/uploads/{uploadId}",
    operationId: "deleteUpload",
    summary: "Delete an upload (tus termination)",
    description: "Deletes the upload and its bytes." + TUS_NOTE,
    tag: "uploads",
    authenticated: true,
    parameters: [UPLOAD_ID, TUS_RESUMABLE],
    success: { status: 204, description: "Deleted", content: {} },
    // A malformed or overlong id (or a percent-encoding that decodes to nothing) is 400 before tus sees it.
    errors: ["VALIDATION_ERROR", "NOT_FOUND"],
    protocolErrors: TUS_VERSION_ERROR,
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
