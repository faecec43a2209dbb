import type { FastifyInstance, FastifyReply, FastifyRequest } from "fastify";
import { AppError, serviceUnavailable } from "@renderbus/errors";
import type { GatewayDeps } from "../deps.js";
import { exceedsJsonDepth, MAX_JSON_DEPTH } from "../http/json-depth.js";
import { authErrorEnvelope } from "./auth-error-envelope.js";
import { authUpstreamUrl } from "./auth-upstream-url.js";
import { AuthAbuseLimits } from "./auth-abuse-limits.js";

const HOP_BY_HOP = new Set(["connection", "keep-alive", "transfer-encoding", "upgrade", "host", "content-length"]);

// Client-supplied claims about where the request came from: the gateway states the client IP itself.
const FORWARDING_HEADERS = new Set(["x-forwarded-for", "x-forwarded-host", "x-forwarded-proto", "x-forwarded-port", "x-real-ip", "forwarded"]);

/**
 * `/auth/*` (sign-up, sign-in, sign-out, session) and the OAuth well-known documents are served by the auth service;
 * the gateway forwards them byte for byte, cookies included, so the browser only ever talks to one origin. Only the
 * auth service's own paths are forwarded (auth-upstream-url.ts), sign-in, sign-up, OAuth client registration and
 * password reset are limited first (auth-abuse-limits.ts), and the auth service learns the client IP from
 * `X-Forwarded-For`, which the gateway sets to `request.ip` whatever the client sent.
 */
export async function registerAuthProxy(app: FastifyInstance, deps: GatewayDeps): Promise<void> {
  const limits = new AuthAbuseLimits(deps.redis, deps.config);
  await app.register(async (scope) => {
    scope.removeAllContentTypeParsers();
    // Forwarded as bytes, but the nesting limit holds here as on every route: the auth service parses JSON bodies,
    // whatever their declared type (a form body is checked too when it looks like JSON).
    scope.addContentTypeParser("*", { parseAs: "buffer" }, (request, body, done) => {
      if (looksLikeJson(request.headers["content-type"], body as Buffer) && exceedsJsonDepth((body as Buffer).toString("utf8"))) {
        return done(new AppError("VALIDATION_ERROR", `body: nested deeper than ${MAX_JSON_DEPTH} levels`), undefined);
      }
      done(null, body);
    });
    const forward = async (request: FastifyRequest, reply: FastifyReply) => {
      const target = authUpstreamUrl(request.raw.url ?? "", deps.config.AUTH_HTTP_URL);
      if (!target) throw new AppError("NOT_FOUND", "No such auth route");
      const body = ["GET", "HEAD"].includes(request.method) ? undefined : (request.body as Buffer | undefined);
      const spent = await limits.spend({ method: request.method, pathname: target.pathname, contentType: request.headers["content-type"], body, ip: request.ip });

      const headers = new Headers();
      for (const [name, value] of Object.entries(request.headers)) {
        if (value === undefined || HOP_BY_HOP.has(name) || FORWARDING_HEADERS.has(name)) continue;
        headers.set(name, Array.isArray(value) ? value.join(", ") : value);
      }
      headers.set("x-forwarded-for", request.ip);
      headers.set("x-forwarded-host", request.headers.host ?? "");
      headers.set("x-request-id", request.id);
      let response: Response;
      let responseBody: Buffer;
      try {
        // The timeout covers the whole answer, body included: a stalled auth service costs a client 503, not a hang.
        response = await fetch(target, { method: request.method, headers, body, redirect: "manual", signal: AbortSignal.timeout(deps.config.AUTH_PROXY_TIMEOUT_MS) });
        responseBody = Buffer.from(await response.arrayBuffer());
      } catch (error) {
        const timedOut = error instanceof Error && error.name === "TimeoutError";
        throw serviceUnavailable(timedOut ? "The auth service did not answer in time; retry later" : undefined);
      }
      await spent.settle(response.status);

      const refused = authErrorEnvelope(target.pathname, response.status, response.headers.get("content-type"), responseBody);
      reply.status(refused ? refused.httpStatus : response.status);
      response.headers.forEach((value, name) => {
        if (name !== "set-cookie" && !HOP_BY_HOP.has(name) && name !== "content-encoding" && !(refused && name === "content-type")) reply.header(name, value);
      });
      const cookies = response.headers.getSetCookie();
      if (cookies.length > 0) reply.header("set-cookie", cookies);
      // Better Auth's own limiter says its wait in X-Retry-After; RATE_LIMITED answers carry Retry-After.
      if (refused?.code === "RATE_LIMITED" && !response.headers.has("retry-after")) reply.header("retry-after", retryAfterOf(response.headers.get("x-retry-after")));
      if (refused) return reply.type("application/json; charset=utf-8").send(refused.toBody());
      return reply.send(responseBody);
    };
    scope.all("/auth/*", forward);
    scope.all("/.well-known/*", forward);
  });
}

/** A body declared JSON, or whose first character other than whitespace opens an array or object. */
function looksLikeJson(contentType: string | undefined, body: Buffer): boolean {
  if (contentType && /json/i.test(contentType)) return true;
  for (const byte of body) {
    if (byte === 0x20 || byte === 0x09 || byte === 0x0a || byte === 0x0d) continue;
    return byte === 0x7b || byte === 0x5b;
  }
  return false;
}

/** A wait in whole seconds from an upstream header; a minute when it says nothing usable. */
function retryAfterOf(value: string | null): string {
  const seconds = Number(value);
  return Number.isInteger(seconds) && seconds >= 1 && seconds <= 86_400 ? String(seconds) : "60";
}
