import type { IncomingMessage, ServerResponse } from "node:http";
import { AUTH_BASE_PATH, type RenderbusAuth } from "../sessions/better-auth.js";

/**
 * Where clients look for the RFC 8414 metadata of the issuer `<PUBLIC_URL>/auth`: the path-suffixed well-known
 * form (RFC 8414 section 3.1), the root form older clients use, and the issuer-relative form.
 */
const METADATA_PATHS = new Set([
  "/.well-known/oauth-authorization-server",
  `/.well-known/oauth-authorization-server${AUTH_BASE_PATH}`,
  `${AUTH_BASE_PATH}/.well-known/oauth-authorization-server`,
]);

/**
 * Serves the authorization-server metadata (Better Auth's server-only endpoint) at the well-known paths.
 * @returns false when the request is not for the metadata.
 */
export async function handleAuthorizationServerMetadata(request: IncomingMessage, response: ServerResponse, betterAuth: RenderbusAuth): Promise<boolean> {
  const path = (request.url ?? "/").split("?")[0] ?? "/";
  if (!METADATA_PATHS.has(path) || (request.method !== "GET" && request.method !== "HEAD")) return false;
  const metadata = await betterAuth.api.getOAuthServerConfig();
  response
    .writeHead(200, {
      "content-type": "application/json",
      "cache-control": "public, max-age=300",
      // Browser-based MCP clients read it cross-origin.
      "access-control-allow-origin": "*",
    })
    .end(request.method === "HEAD" ? undefined : JSON.stringify(metadata));
  return true;
}
