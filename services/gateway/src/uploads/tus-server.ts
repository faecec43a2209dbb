import { AsyncLocalStorage } from "node:async_hooks";
import { EVENTS, Server } from "@tus/server";
import { AppError, type ErrorCode } from "@renderbus/errors";
import { newId } from "@renderbus/ids";
import { planOf } from "@renderbus/plans";
import type { AuthContext } from "@renderbus/rpc";
import { UPLOAD_ORG_METADATA } from "@renderbus/uploads";
import type { GatewayDeps } from "../deps.js";
import { uploadAllowance } from "./upload-quota.js";

/** The path `/uploads` is mounted at. */
export const UPLOADS_PATH = "/uploads";

/** The tus protocol version served (the only value of `Tus-Resumable` accepted). */
export const TUS_VERSION = "1.0.0";

/** The tus status codes in the error codes of docs/concepts.md#errors (the status itself stays tus'). */
function errorCodeOf(status: number): ErrorCode {
  if (status === 413) return "PAYLOAD_TOO_LARGE";
  if (status === 404 || status === 410) return "NOT_FOUND";
  if (status === 403) return "FORBIDDEN";
  if (status === 409 || status === 423) return "CONFLICT";
  // 412: Tus-Resumable missing or not a version served; VALIDATION_ERROR below.
  if (status === 503) return "SERVICE_UNAVAILABLE";
  if (status >= 400 && status < 500) return "VALIDATION_ERROR";
  return "INTERNAL_ERROR";
}

/** The error body of a tus answer of `status` (docs/uploads.md, "Errors"): tus' status, our `{error: {code, message}}`. */
export function tusErrorBody(status: number, message: string) {
  const code = errorCodeOf(status);
  return new AppError(code, code === "INTERNAL_ERROR" ? "Internal error" : message).toBody();
}

/**
 * `@tus/server` answers some refusals itself in plain text (an invalid tus header: 400; a method without a handler:
 * 404), past `onResponseError`. Every error answer it writes goes out here with the error body instead.
 */
class JsonErrorServer extends Server {
  override async write(...[context, headers, status, body = ""]: Parameters<Server["write"]>): ReturnType<Server["write"]> {
    if (status < 400) return super.write(context, headers, status, body);
    headers.set("Content-Type", "application/json; charset=utf-8");
    const json = body.startsWith('{"error"') ? body : JSON.stringify(tusErrorBody(status, body.trim() || "Upload request failed"));
    return super.write(context, headers, status, json);
  }
}

/**
 * The tus 1.0 server of `/uploads` (`@tus/server`; creation, creation-with-upload, creation-defer-length, HEAD
 * offset, PATCH, termination, expiration) over the upload store. Each request runs with the caller's auth context
 * (`handle`): new uploads get an `upload_` id and their org, any other request on an upload of another org is a 404
 * (never revealing it exists), and sizes are capped by the caller's plan (`maxInputBytes`). A new upload reserves its
 * size (a deferred one, the plan's max until it finishes) from the org's upload quota, refused with PLAN_LIMIT past it;
 * a finished one counts its real size, a terminated one (or one the store failed to create) gives its bytes back.
 */
export function createTusServer(deps: Pick<GatewayDeps, "uploads" | "uploadQuota" | "plans" | "config" | "logger">) {
  // Per request: its caller, and the upload it reserved quota for (a POST), so a failure after the reservation can
  // give it back.
  const requests = new AsyncLocalStorage<{ auth: AuthContext; reserved?: string }>();
  const callerOf = (): AuthContext => {
    const request = requests.getStore();
    if (!request) throw new Error("a tus request ran outside an authenticated request");
    return request.auth;
  };
  /**
   * A creation answered with an error after its reservation leaves nothing behind: the client has no Location for the
   * upload and will create another. It gives the bytes back, and removes the upload when one exists after all (a step
   * after the store's failed, e.g. counting its final size). When the store cannot be read or cleaned, the reservation
   * stays until the upload would have expired, and the sweep removes what is left.
   */
  const discardFailedCreation = async (): Promise<void> => {
    const request = requests.getStore();
    const id = request?.reserved;
    if (!request || !id) return;
    try {
      if (await deps.uploads.describe(id)) await deps.uploads.dataStore.remove(id);
      await deps.uploadQuota.release(request.auth.orgId, id);
    } catch (error) {
      deps.logger.warn({ err: error, uploadId: id }, "failed upload creation not cleaned up: kept until it expires");
    }
  };
  const publicUrl = deps.config.PUBLIC_URL.replace(/\/$/, "");
  const server = new JsonErrorServer({
    path: UPLOADS_PATH,
    datastore: deps.uploads.dataStore,
    // Locations are built from PUBLIC_URL, never from the request's Host or X-Forwarded-* headers.
    generateUrl: (_request, { id }) => `${publicUrl}${UPLOADS_PATH}/${id}`,
    namingFunction: () => newId("upload"),
    maxSize: () => planOf(callerOf().plan, deps.plans).maxInputBytes,
    // The dashboard is served from PUBLIC_URL: no other origin is told it may read the answers.
    allowedOrigins: [new URL(publicUrl).origin],
    onUploadCreate: async (_request, upload) => {
      const { orgId, plan: planName } = callerOf();
      const plan = planOf(planName, deps.plans);
      const expiresAt = Date.now() + deps.config.UPLOAD_RETENTION_HOURS * 3_600_000;
      try {
        await deps.uploadQuota.reserve(orgId, upload.id, upload.size ?? plan.maxInputBytes, expiresAt, uploadAllowance(plan, deps.config));
        requests.getStore()!.reserved = upload.id;
      } catch (error) {
        if (error instanceof AppError) throw { status_code: error.httpStatus, body: JSON.stringify(error.toBody()) };
        throw error;
      }
      return { metadata: { ...upload.metadata, [UPLOAD_ORG_METADATA]: orgId } };
    },
    onUploadFinish: async (_request, upload) => {
      await deps.uploadQuota.settle(callerOf().orgId, upload.id, upload.size ?? upload.offset);
      return {};
    },
    onIncomingRequest: async (request, uploadId) => {
      if (request.method === "POST") return;
      const upload = await deps.uploads.describe(uploadId);
      if (!upload || upload.orgId !== callerOf().orgId) throw { status_code: 404, body: "The file for this url was not found\n" };
    },
    onResponseError: async (_request, error) => {
      await discardFailedCreation();
      const status = "status_code" in error && typeof error.status_code === "number" ? error.status_code : 500;
      if (status >= 500) deps.logger.error({ err: error }, "upload request failed");
      const message = "body" in error && typeof error.body === "string" ? error.body.trim() : "Upload request failed";
      // Our own refusals (the quota's PLAN_LIMIT) come with their error body already.
      if (message.startsWith('{"error"')) return { status_code: status, body: message };
      return { status_code: status, body: JSON.stringify(tusErrorBody(status, message)) };
    },
  });
  server.on(EVENTS.POST_TERMINATE, (_request, _response, id) => {
    const request = requests.getStore();
    if (!request) return;
    deps.uploadQuota.release(request.auth.orgId, id).catch((error: unknown) => deps.logger.warn({ err: error, uploadId: id }, "upload quota not released"));
  });
  return {
    server,
    /** Serves one tus request as `auth`. */
    handle: (auth: AuthContext, request: Parameters<Server["handle"]>[0], response: Parameters<Server["handle"]>[1]) =>
      requests.run({ auth }, () => server.handle(request, response)),
  };
}
