import { z } from "zod";
import { notFound } from "@renderbus/errors";
import type { UploadDescription } from "@renderbus/uploads";
import { defineRoute } from "../http/route.js";

/** An upload as the API shows it (docs/uploads.md). */
export function presentUpload(upload: UploadDescription) {
  return { id: upload.id, size: upload.size, offset: upload.offset, complete: upload.complete, createdAt: upload.createdAt, expiresAt: upload.expiresAt };
}

export const uploadRoutes = [
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
    // HEAD /uploads/{id} is tus' offset request (uploads.protocol.ts), not this route's headers.
    exposeHead: false,
    handler: async ({ params, auth }, deps) => {
      const upload = await deps.uploads.describe(params.uploadId);
      if (!upload || upload.orgId !== auth.orgId) throw notFound(`Upload ${params.uploadId}`);
      return { data: presentUpload(upload) };
    },
  }),
];
