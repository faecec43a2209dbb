import type { FastifyRequest } from "fastify";
import { forbidden, unauthorized } from "@renderbus/errors";
import type { AuthContext } from "@renderbus/rpc";
import type { GatewayDeps } from "../deps.js";
import { spendClientBudget } from "../auth/request-budget.js";

/** Path of the MCP endpoint; with PUBLIC_URL it is the OAuth resource tokens must be issued for. */
export const MCP_PATH = "/mcp";
/** RFC 9728 protected-resource metadata of `/mcp` (also served at the path-suffixed form clients try first). */
export const PROTECTED_RESOURCE_METADATA_PATH = "/.well-known/oauth-protected-resource";

/** The canonical resource identifier of the MCP endpoint (RFC 8707), e.g. `https://api.example.com/mcp`. */
export const mcpResourceOf = (publicUrl: string): string => new URL(MCP_PATH, publicUrl).toString();

/** The URL of the protected-resource metadata, named in every 401 from `/mcp`. */
export const resourceMetadataUrlOf = (publicUrl: string): string => new URL(PROTECTED_RESOURCE_METADATA_PATH, publicUrl).toString();

/** The `WWW-Authenticate` challenge of a 401 from `/mcp` (MCP authorization spec; RFC 6750 error when a token was sent). */
export function bearerChallenge(publicUrl: string, tokenSent: boolean): string {
  const error = tokenSent ? ', error="invalid_token", error_description="The access token is invalid, expired or revoked"' : "";
  return `Bearer resource_metadata="${resourceMetadataUrlOf(publicUrl)}"${error}`;
}

/**
 * Resolves the bearer credential of an MCP request: an API key or an OAuth access token issued for this `/mcp`
 * resource. Cookies are ignored on purpose: an agent endpoint that honoured the dashboard cookie would be open to
 * cross-site requests. @throws AppError UNAUTHORIZED when there is no usable bearer credential.
 */
export async function resolveMcpCredential(request: FastifyRequest, deps: GatewayDeps): Promise<AuthContext> {
  const authorization = request.headers.authorization;
  const token = typeof authorization === "string" ? /^Bearer\s+(\S+)$/i.exec(authorization.trim())?.[1] : undefined;
  // Counted per client before any lookup, like REST (authenticate.ts): bogus tokens cost the auth service nothing
  // once a client is over its budget.
  await spendClientBudget(request.ip, deps);
  if (!token) throw unauthorized();
  const auth = token.startsWith("rb_")
    ? await deps.credentials.resolveApiKey(token)
    : await deps.credentials.resolveAccessToken(token, mcpResourceOf(deps.config.PUBLIC_URL));
  request.auth = auth;
  return auth;
}

const LOOPBACK_HOSTS = new Set(["localhost", "127.0.0.1", "[::1]"]);

/**
 * MCP servers must validate Origin (DNS rebinding). Agents send none; a browser-based client must come from the
 * gateway's own origin, or, outside production, from a loopback origin (local tools such as the MCP Inspector).
 * The Host header is not trusted here: under DNS rebinding it names the attacker's host.
 * @throws AppError FORBIDDEN for any other origin.
 */
export function assertAllowedOrigin(request: FastifyRequest, deps: GatewayDeps): void {
  const origin = request.headers.origin;
  if (origin === undefined) return;
  const expected = new URL(deps.config.PUBLIC_URL).origin;
  if (origin === expected) return;
  let parsed: URL | undefined;
  try {
    parsed = new URL(origin);
  } catch {
    throw forbidden("Cross-origin MCP request refused");
  }
  if (deps.config.MODE !== "production" && LOOPBACK_HOSTS.has(parsed.hostname)) return;
  throw forbidden("Cross-origin MCP request refused");
}
