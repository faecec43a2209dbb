import type { FastifyInstance } from "fastify";
import { z } from "zod";
import { AppError, notFound } from "@renderbus/errors";
import { verifyOutputSignature } from "@renderbus/storage";
import type { GatewayDeps } from "../deps.js";

const query = z.object({ expires: z.coerce.number().int(), signature: z.string().regex(/^[0-9a-f]{64}$/) });

/**
 * Serves job outputs from signed, expiring URLs (the `result.url` of a completed job). The signature is the
 * credential: links work from a browser or a webhook receiver without an API key, until they expire. With the S3
 * store (docs/operations.md, "Object storage") a valid link redirects to a short-lived presigned URL of the store
 * (S3_DOWNLOADS=redirect) or is streamed through the gateway (S3_DOWNLOADS=stream); the local store is streamed.
 */
export function registerOutputRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  app.get("/outputs/*", async (request, reply) => {
    const key = (request.params as { "*": string })["*"];
    const parsed = query.safeParse(request.query);
    if (!parsed.success) throw new AppError("UNAUTHORIZED", "Authentication is invalid or expired");
    const valid = verifyOutputSignature({ key, expires: parsed.data.expires, signature: parsed.data.signature, secret: deps.config.OUTPUT_SIGNING_SECRET });
    if (!valid) throw new AppError("UNAUTHORIZED", "Authentication is invalid or expired");
    if (deps.outputs.kind === "s3" && deps.config.S3_DOWNLOADS === "redirect") {
      // Checked first, so a missing output is our 404, not the store's XML error page after the redirect.
      if (!(await deps.outputs.head(key))) throw notFound("Output");
      // The presigned URL never outlives the link it stands for.
      const linkSecondsLeft = Math.ceil((parsed.data.expires - Date.now()) / 1000);
      const location = await deps.outputs.presignedDownloadUrl(key, { expiresInSeconds: Math.min(deps.config.S3_PRESIGN_SECONDS, linkSecondsLeft) });
      if (location) {
        reply.header("Cache-Control", "private, no-store");
        return reply.redirect(location, 302);
      }
    }
    const output = await deps.outputs.open(key);
    if (!output) throw notFound("Output");
    reply.header("Content-Type", output.contentType);
    reply.header("Content-Length", String(output.size));
    reply.header("Cache-Control", "private, max-age=3600");
    return reply.send(output.stream);
  });
}
