import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import type { GatewayDeps } from "../deps.js";
import { authenticate } from "../auth/authenticate.js";
import { createTusServer, TUS_VERSION, tusErrorBody, UPLOADS_PATH } from "./tus-server.js";

/**
 * Mounts the tus protocol at `/uploads` and `/uploads/{id}` (docs/uploads.md). Every request is authenticated and
 * counted against the rate limit once, like any API request, however many bytes a PATCH carries; then the raw
 * request goes to `@tus/server`, which reads the body itself (no body parser, no 1 MB JSON limit here).
 * `GET /uploads/{id}` is the route table's (uploads.routes.ts).
 */
export function registerUploadProtocol(app: FastifyInstance, deps: GatewayDeps): void {
  const tus = createTusServer(deps);
  void app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    // The body stays unread on the socket for tus.
    scope.addContentTypeParser("*", (_request, _payload, done) => done(null));
    const handler = async (request: FastifyRequest, reply: FastifyReply) => {
      const auth = await authenticate(request, reply, deps);
      // tus 1.0: a request of another (or no) protocol version is 412 with the versions served. Answered here, with
      // the error body of every other answer; @tus/server would answer it in plain text.
      if (request.method !== "OPTIONS" && request.headers["tus-resumable"] !== TUS_VERSION) {
        return reply
          .code(412)
          .header("Tus-Resumable", TUS_VERSION)
          .header("Tus-Version", TUS_VERSION)
          .send(tusErrorBody(412, `Tus-Resumable: required, ${TUS_VERSION} (the tus protocol version)`));
      }
      // Headers set so far (request id, rate limit, CSRF cookie) go out with tus' answer.
      for (const [name, value] of Object.entries(reply.getHeaders())) if (value !== undefined) reply.raw.setHeader(name, value as string | number | string[]);
      reply.hijack();
      await tus.handle(auth, request.raw, reply.raw);
    };
    scope.route({ method: ["POST", "OPTIONS"], url: UPLOADS_PATH, handler });
    scope.route({ method: ["HEAD", "PATCH", "DELETE", "OPTIONS"], url: `${UPLOADS_PATH}/:uploadId`, handler });
  });
}
