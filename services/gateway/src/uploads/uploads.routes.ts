import { z } from "zod";
import { AppError, notFound, validationError } from "@renderbus/errors";
import { isId } from "@renderbus/ids";
import { planOf } from "@renderbus/plans";
import type { AuthContext } from "@renderbus/rpc";
import type { UploadDescription } from "@renderbus/uploads";
import type { GatewayDeps } from "../deps.js";
import { defineRoute } from "../http/route.js";
import { one, page } from "../routes/response-schemas.js";
import { cursorQuery } from "../routes/schemas.js";
import { UPLOADS_PATH } from "./tus-server.js";
import { uploadAllowance } from "./upload-quota.js";

/** The largest file `upload_media` takes inline (decoded); larger files go through tus (`create_upload`). */
export const INLINE_UPLOAD_MAX_BYTES = 1024 * 1024;
/** Base64 of INLINE_UPLOAD_MAX_BYTES, with room for the rest of the JSON body. */
export const INLINE_UPLOAD_BODY_LIMIT = Math.ceil((INLINE_UPLOAD_MAX_BYTES * 4) / 3) + 64 * 1024;
const BASE64 = /^[A-Za-z0-9+/]*={0,2}$/;
const filename = z.string().min(1).max(255).regex(/^[\p{L}\p{N} ._()+-]+$/u, "must be a file name of letters, digits, spaces and . _ ( ) + -").optional().describe("The file's name, e.g. clip.mp4 (its extension helps the worker read subtitles)");

/**
 * Counts a new upload against the org's quota (uploads/upload-quota.ts), or removes it again and refuses with
 * PLAN_LIMIT when the org already keeps its allowance.
 */
async function reserveOrRemove(deps: GatewayDeps, auth: AuthContext, upload: UploadDescription): Promise<void> {
  const plan = planOf(auth.plan, deps.plans);
  try {
    await deps.uploadQuota.reserve(auth.orgId, upload.id, upload.size ?? plan.maxInputBytes, upload.expiresAt, uploadAllowance(plan, deps.config));
  } catch (error) {
    await deps.uploads.dataStore.remove(upload.id).catch((removal: unknown) => deps.logger.warn({ err: removal, uploadId: upload.id }, "refused upload not removed: the sweep will"));
    throw error;
  }
}

/** An upload as the API shows it (docs/uploads.md). */
export function presentUpload(upload: UploadDescription) {
  return { id: upload.id, size: upload.size, offset: upload.offset, complete: upload.complete, createdAt: upload.createdAt, expiresAt: upload.expiresAt };
}

export const uploadRoutes = [
  defineRoute({
    method: "POST",
    url: "/upload-links",
    operationId: "createUploadLink",
    summary: "Create an upload to send with tus",
    description:
      "Creates an empty upload of `size` bytes (at most the plan's max input size) and answers where and how to send its bytes: PATCH `url` with the given headers plus your own `Authorization: Bearer` credential, the file as the body (tus 1.0; resume after a drop with HEAD `url` for Upload-Offset). For agents that can send files over HTTP; tus clients can POST /uploads instead. Once complete, use `upload.id` as a job input.",
    tag: "uploads",
    successStatus: 201,
    mcpTool: "create_upload",
    response: one("UploadLink"),
    body: z.strictObject({ size: z.number().int().min(1).describe("The file's size in bytes"), filename }),
    errors: ["VALIDATION_ERROR", "PAYLOAD_TOO_LARGE", "PLAN_LIMIT"],
    handler: async ({ body, auth }, deps) => {
      const cap = planOf(auth.plan, deps.plans).maxInputBytes;
      if (body.size > cap) throw new AppError("PAYLOAD_TOO_LARGE", `size: larger than the plan's max input size (${cap} bytes)`);
      const upload = await deps.uploads.create({ orgId: auth.orgId, size: body.size, ...(body.filename ? { filename: body.filename } : {}) });
      await reserveOrRemove(deps, auth, upload);
      return {
        data: {
          upload: presentUpload(upload),
          url: `${deps.config.PUBLIC_URL.replace(/\/$/, "")}${UPLOADS_PATH}/${upload.id}`,
          method: "PATCH",
          // The credential is the caller's own and never echoed back: they add `Authorization: Bearer <it>`.
          headers: { "Tus-Resumable": "1.0.0", "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream" },
        },
      };
    },
  }),
  defineRoute({
    method: "POST",
    url: "/uploads/inline",
    operationId: "uploadMedia",
    summary: "Upload a small file inline",
    description: `Stores a file of at most ${INLINE_UPLOAD_MAX_BYTES / 1024 / 1024} MB sent base64-encoded in the body and answers the complete upload; use its id as a job input. Larger files: create_upload (POST /upload-links) or tus at POST /uploads.`,
    tag: "uploads",
    successStatus: 201,
    mcpTool: "upload_media",
    response: one("Upload"),
    bodyLimit: INLINE_UPLOAD_BODY_LIMIT,
    body: z.strictObject({
      base64: z.string().min(1).max(Math.ceil((INLINE_UPLOAD_MAX_BYTES * 4) / 3) + 4).describe("The file's bytes, base64 (at most 1 MB decoded)"),
      filename,
    }),
    errors: ["VALIDATION_ERROR", "PAYLOAD_TOO_LARGE", "PLAN_LIMIT"],
    handler: async ({ body, auth }, deps) => {
      const encoded = body.base64.replace(/\s+/g, "");
      if (!BASE64.test(encoded)) throw new AppError("VALIDATION_ERROR", "body.base64: must be base64");
      const bytes = Buffer.from(encoded, "base64");
      if (bytes.length > INLINE_UPLOAD_MAX_BYTES) throw new AppError("PAYLOAD_TOO_LARGE", `body.base64: larger than ${INLINE_UPLOAD_MAX_BYTES} bytes decoded; use create_upload`);
      const cap = planOf(auth.plan, deps.plans).maxInputBytes;
      if (bytes.length > cap) throw new AppError("PAYLOAD_TOO_LARGE", `body.base64: larger than the plan's max input size (${cap} bytes)`);
      const upload = await deps.uploads.createComplete({ orgId: auth.orgId, bytes, ...(body.filename ? { filename: body.filename } : {}) });
      await reserveOrRemove(deps, auth, upload);
      return { data: presentUpload(upload) };
    },
  }),
  defineRoute({
    method: "GET",
    url: "/uploads",
    operationId: "listUploads",
    summary: "List uploads",
    description:
      "The org's uploads still kept (neither expired nor deleted), newest first, cursor paginated (pass nextCursor back as cursor): what counts against the org's upload quota (at most 10 times the plan's max input size at once). Delete one no job needs with DELETE /uploads/{id} (tus). Uploads made before 2026-12-01 are not listed.",
    tag: "uploads",
    query: z.strictObject({ ...cursorQuery }),
    errors: ["VALIDATION_ERROR"],
    response: page("Upload"),
    handler: async ({ query, auth }, deps) => {
      // A cursor is the last upload id of the page before, as every list's cursor is an id of its own kind.
      if (query.cursor !== undefined && !isId("upload", query.cursor)) throw validationError("cursor: is invalid");
      const { ids, nextCursor } = await deps.uploadQuota.heldIds(auth.orgId, query);
      const uploads = await Promise.all(ids.map((id) => deps.uploads.describe(id)));
      // An upload the sweep or a DELETE removed since it was counted is left out, never another org's.
      return { data: uploads.filter((upload) => upload !== undefined && upload.orgId === auth.orgId).map((upload) => presentUpload(upload!)), nextCursor };
    },
  }),
  defineRoute({
    method: "GET",
    url: "/uploads/:uploadId",
    operationId: "getUpload",
    summary: "Get an upload",
    description:
      "A tus upload of the org (created with POST /uploads, tus 1.0): its declared size, the bytes received so far (offset), whether it is complete and when it expires. Use a complete upload as a job input: inputs.source = its id.",
    tag: "uploads",
    params: z.strictObject({ uploadId: z.string().min(1).max(100).describe("An upload_ id") }),
    errors: ["NOT_FOUND"],
    response: one("Upload"),
    // HEAD /uploads/{id} is tus' offset request (uploads.protocol.ts), not this route's headers.
    exposeHead: false,
    handler: async ({ params, auth }, deps) => {
      const upload = await deps.uploads.describe(params.uploadId);
      if (!upload || upload.orgId !== auth.orgId) throw notFound(`Upload ${params.uploadId}`);
      return { data: presentUpload(upload) };
    },
  }),
];
