import type { FastifyInstance } from "fastify";
import { serviceUnavailable } from "@renderbus/errors";
import type { GatewayDeps } from "../deps.js";

const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "host", "content-length"]);

/**
 * `/auth/*` (sign-up, sign-in, sign-out, session) and the OAuth well-known documents are served by the auth service;
 * the gateway forwards them byte for byte, cookies included, so the browser only ever talks to one origin.
 */
export async function registerAuthProxy(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    scope.addContentTypeParser("*", { parseAs: "buffer" }, (_request, body, done) => done(null, body));
    const forward = async (request: import("fastify").FastifyRequest, reply: import("fastify").FastifyReply) => {
      const headers = new Headers();
      for (const [name, value] of Object.entries(request.headers)) {
        if (value === undefined || HOP_BY_HOP.has(name)) continue;
        headers.set(name, Array.isArray(value) ? value.join(", ") : value);
      }
      headers.set("x-forwarded-host", request.headers.host ?? "");
      headers.set("x-request-id", request.id);
      let response: Response;
      try {
        response = await fetch(new URL(request.url, deps.config.AUTH_HTTP_URL), {
          method: request.method,
          headers,
          body: ["GET", "HEAD"].includes(request.method) ? undefined : (request.body as Buffer | undefined),
          redirect: "manual",
        });
      } catch {
        throw serviceUnavailable();
      }
      reply.status(response.status);
      response.headers.forEach((value, name) => {
        if (name !== "set-cookie" && !HOP_BY_HOP.has(name) && name !== "content-encoding") reply.header(name, value);
      });
      const cookies = response.headers.getSetCookie();
      if (cookies.length > 0) reply.header("set-cookie", cookies);
      return reply.send(Buffer.from(await response.arrayBuffer()));
    };
    scope.all("/auth/*", forward);
    scope.all("/.well-known/*", forward);
  });
}
