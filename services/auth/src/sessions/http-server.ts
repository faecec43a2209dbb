import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { toNodeHandler } from "better-auth/node";
import type { Logger } from "@renderbus/telemetry";
import type { AuthConfig } from "../config.js";
import type { AuthResources } from "../auth-resources.js";
import { AUTH_BASE_PATH, type RenderbusAuth } from "./better-auth.js";
import { handleOAuthPage } from "../oauth/oauth-pages.js";
import { handleAuthorizationServerMetadata } from "../oauth/authorization-server-metadata.js";

export interface SessionHttpServer {
  port: number;
  close(): Promise<void>;
}

/**
 * Better Auth's authorize endpoint answers JSON instead of a redirect when `Sec-Fetch-Mode` is "cors". The gateway's
 * proxy (Node's fetch) always sends "cors", so a browser's navigation would get JSON; a request that accepts HTML is
 * a navigation, and is passed on as one.
 */
function treatHtmlRequestsAsNavigation(request: IncomingMessage): void {
  const accept = request.headers.accept ?? "";
  if (accept.includes("text/html")) request.headers["sec-fetch-mode"] = "navigate";
}

/** What the OAuth pages need besides Better Auth; without it only Better Auth's own routes are served. */
export interface OAuthPagesDeps {
  store: AuthResources;
  config: AuthConfig;
}

/**
 * The HTTP server of Better Auth's `/auth/*` routes (sign-up, sign-in, sign-out, session, OAuth for MCP agents),
 * the OAuth sign-in and consent pages and the authorization-server metadata. The gateway proxies `/auth/*` and
 * `/.well-known/*` here unchanged; `/healthz` answers for probes.
 */
export async function startSessionHttpServer(
  betterAuth: RenderbusAuth,
  port: number,
  host: string,
  logger?: Logger,
  oauth?: OAuthPagesDeps,
): Promise<SessionHttpServer> {
  const handle = toNodeHandler(betterAuth);
  const serveOAuth = async (request: IncomingMessage, response: ServerResponse): Promise<boolean> =>
    (await handleAuthorizationServerMetadata(request, response, betterAuth)) ||
    (oauth !== undefined && (await handleOAuthPage(request, response, { betterAuth, ...oauth })));
  const server: Server = createServer((request, response) => {
    const path = (request.url ?? "/").split("?")[0] ?? "/";
    if (path === "/healthz") {
      response.writeHead(200, { "content-type": "application/json" }).end('{"data":{"status":"ok"}}');
      return;
    }
    const fail = (error: unknown) => {
      logger?.error({ err: error, path }, "auth route failed");
      if (!response.headersSent) response.writeHead(500, { "content-type": "application/json" });
      response.end('{"error":{"code":"INTERNAL_ERROR","message":"Internal error"}}');
    };
    serveOAuth(request, response)
      .then((served) => {
        if (served) return;
        if (path !== AUTH_BASE_PATH && !path.startsWith(`${AUTH_BASE_PATH}/`)) {
          response.writeHead(404, { "content-type": "application/json" }).end('{"error":{"code":"NOT_FOUND","message":"Route not found"}}');
          return;
        }
        if (path === `${AUTH_BASE_PATH}/oauth2/authorize`) treatHtmlRequestsAsNavigation(request);
        return handle(request, response);
      })
      .catch(fail);
  });
  server.keepAliveTimeout = 65_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  const address = server.address();
  return {
    port: typeof address === "object" && address ? address.port : port,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeIdleConnections();
      }),
  };
}
