import Fastify, { type FastifyInstance } from "fastify";
import { randomUUID } from "node:crypto";
import { AppError } from "@renderbus/errors";
import type { AuthContext } from "@renderbus/rpc";
import type { GatewayDeps } from "./deps.js";
import type { RouteDefinition } from "./http/route.js";
import { pathOf, sendError } from "./http/errors.js";
import { authenticate } from "./auth/authenticate.js";
import { parseRequestPart } from "./http/validation.js";
import { exceedsJsonDepth, MAX_JSON_DEPTH } from "./http/json-depth.js";
import { apiRoutes } from "./routes/index.js";
import { registerHealthRoutes } from "./health/health.routes.js";
import { registerAuthProxy } from "./auth/auth-proxy.js";
import { registerOutputRoutes } from "./outputs/outputs.routes.js";
import { registerJobEventStream } from "./sse/job-events.js";
import { registerWebhookEventStream } from "./sse/webhook-events.js";
import { registerOpenApiRoutes } from "./openapi/openapi.routes.js";
import { buildOpenApiDocument } from "./openapi/openapi-document.js";
import { registerResponseCheck } from "./http/response-check.js";
import { registerMcpRoutes } from "./mcp/mcp.routes.js";
import { registerJobWaits } from "./jobs-wait/job-waits.js";
import { registerDashboard } from "./dashboard/dashboard.routes.js";
import { registerUploadProtocol } from "./uploads/uploads.protocol.js";
import { registerBodyDeadlines } from "./http/body-deadlines.js";

declare module "fastify" {
  interface FastifyRequest {
    auth?: AuthContext;
  }
}

const BODY_LIMIT = 1024 * 1024;

/** Builds the gateway's HTTP app: the route table behind authentication, rate limits and one error mapping. */
export async function buildApp(deps: GatewayDeps): Promise<FastifyInstance> {
  const app = Fastify({
    bodyLimit: BODY_LIMIT,
    // Request lines are written by the onResponse hook below (one line per request, with org and request id).
    logger: false,
    genReqId: (request) => {
      const given = request.headers["x-request-id"];
      return typeof given === "string" && /^[\w.-]{1,64}$/.test(given) ? given : randomUUID();
    },
    // Huge bodies are refused by the body limit, deep ones by the JSON parser below; prototype pollution keys are dropped.
    onProtoPoisoning: "remove",
    onConstructorPoisoning: "remove",
    // Router-level refusals (a path parameter over 100 characters, a malformed URL) get the error body of docs/concepts.md#errors too.
    // They skip the onRequest hooks, so they get the headers every response carries here.
    frameworkErrors: (error, request, reply) => sendError(error, request, reply.header("X-Request-Id", request.id).header("X-Content-Type-Options", "nosniff"), deps.logger),
    // `request.ip` is the socket peer unless the peer is a proxy the operator declared (TRUSTED_PROXIES).
    trustProxy: deps.config.TRUSTED_PROXIES.length > 0 ? deps.config.TRUSTED_PROXIES : false,
  }) as unknown as FastifyInstance;

  app.addHook("onRequest", async (request, reply) => {
    reply.header("X-Request-Id", request.id);
    reply.header("X-Content-Type-Options", "nosniff");
    // Only origin-form targets (`/path`): the router strips `scheme://host` from absolute-form ones, which would let
    // a raw request line smuggle another host past routing (SECURITY-AUDIT finding 1).
    if (!isOriginForm(request.raw.url)) throw new AppError("VALIDATION_ERROR", "Request target must be a path starting with /");
  });
  registerBodyDeadlines(app, { bodyMs: deps.config.REQUEST_BODY_TIMEOUT_MS, uploadMs: deps.config.UPLOAD_REQUEST_TIMEOUT_MS }, deps.logger);
  app.addHook("onResponse", async (request, reply) => {
    deps.logger.info(
      { requestId: request.id, method: request.method, route: request.routeOptions.url ?? pathOf(request.url), status: reply.statusCode, orgId: request.auth?.orgId, ms: Math.round(reply.elapsedTime) },
      "request",
    );
  });
  // Fastify's own JSON parser (secure-json-parse): drops `__proto__` and `constructor.prototype` keys.
  const parseJson = app.getDefaultJsonParser("remove", "remove");
  // Every JSON body (REST and /mcp alike) passes here. An empty one (e.g. POST /jobs/{id}/cancel from some clients)
  // is "no body", not malformed JSON; one nested deeper than MAX_JSON_DEPTH is refused by a linear scan before it
  // is parsed, so no request can hold the event loop or overflow the stack later (SECURITY-AUDIT finding 20).
  app.addContentTypeParser("application/json", { parseAs: "string" }, (request, body, done) => {
    if (body === "" || body === undefined) return done(null, undefined);
    if (exceedsJsonDepth(body as string)) return done(new AppError("VALIDATION_ERROR", `body: nested deeper than ${MAX_JSON_DEPTH} levels`), undefined);
    parseJson(request, body as string, done);
  });
  app.setErrorHandler((error, request, reply) => sendError(error, request, reply, deps.logger));
  app.setNotFoundHandler((request, reply) => sendError(new AppError("NOT_FOUND", `No route ${request.method} ${pathOf(request.url)}`), request, reply, deps.logger));

  if (deps.config.GATEWAY_CHECK_RESPONSES) registerResponseCheck(app, buildOpenApiDocument(deps.config.PUBLIC_URL), deps.logger);
  for (const route of apiRoutes) registerRoute(app, route, deps);
  registerJobWaits(app, deps);

  registerHealthRoutes(app, deps);
  await registerAuthProxy(app, deps);
  registerOutputRoutes(app, deps);
  registerUploadProtocol(app, deps);
  registerJobEventStream(app, deps);
  registerWebhookEventStream(app, deps);
  registerOpenApiRoutes(app, deps);
  registerMcpRoutes(app, deps, apiRoutes);
  await registerDashboard(app, deps);
  return app;
}

function isOriginForm(target: string | undefined): boolean {
  return target !== undefined && target.startsWith("/") && !target.startsWith("//");
}

function registerRoute(
  app: FastifyInstance,
  route: RouteDefinition,
  deps: GatewayDeps,
): void {
  app.route({
    method: route.method,
    url: route.url,
    ...(route.exposeHead === false ? { exposeHeadRoute: false } : {}),
    ...(route.bodyLimit ? { bodyLimit: route.bodyLimit } : {}),
    handler: async (request, reply) => {
      const auth = await authenticate(request, reply, deps);
      const params = parseRequestPart(route.params, request.params, "path");
      const query = parseRequestPart(route.query, request.query, "query");
      const body = parseRequestPart(route.body, request.body, "body");
      const result = await route.handler({ body, query, params, auth, request, reply }, deps);
      return reply.status(route.successStatus ?? 200).send(result);
    },
  });
}
