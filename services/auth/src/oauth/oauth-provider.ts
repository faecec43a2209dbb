import { createHash } from "node:crypto";
import { oauthProvider } from "@better-auth/oauth-provider";
import { createAuthMiddleware } from "better-auth/api";
import type { AuthConfig } from "../config.js";
import type { AuthResources } from "../auth-resources.js";
import { membershipOf } from "../orgs/membership.js";

/** The server-rendered sign-in page of the OAuth flow (served by the auth service, reached through the gateway). */
export const OAUTH_SIGN_IN_PATH = "/auth/oauth/sign-in";
/** The server-rendered consent page of the OAuth flow. */
export const OAUTH_CONSENT_PATH = "/auth/oauth/consent";
/** Access tokens live one hour; agents keep access with the refresh token (30 days, rotated on use). */
export const ACCESS_TOKEN_SECONDS = 60 * 60;
/** Scopes agents may ask for: access to `/mcp` is the org's whole API, as with an API key. */
export const OAUTH_SCOPES = ["profile", "email", "offline_access"];

/** The one protected resource tokens are issued for: the gateway's MCP endpoint (RFC 8707 resource indicator). */
export const mcpResourceOf = (publicUrl: string): string => new URL("/mcp", publicUrl).toString();

/**
 * How access and refresh tokens are stored: SHA-256 hex of the token, so the gateway's ResolveAccessToken can find
 * a token by its hash without the plugin's internals, and a database leak reveals no usable token.
 */
export const tokenHashOf = (token: string): string => createHash("sha256").update(token).digest("hex");

/**
 * Better Auth's OAuth 2.1 provider for MCP agents: dynamic client registration (public clients with PKCE), the
 * authorization code grant with refresh tokens, opaque access tokens bound to the `/mcp` resource, and the org the
 * user approved the agent for (the consent's reference id, copied onto every token).
 */
export function renderbusOAuthProvider(config: AuthConfig, store: AuthResources) {
  const resource = mcpResourceOf(config.PUBLIC_URL);
  return oauthProvider({
    loginPage: OAUTH_SIGN_IN_PATH,
    consentPage: OAUTH_CONSENT_PATH,
    scopes: OAUTH_SCOPES,
    grantTypes: ["authorization_code", "refresh_token"],
    // Opaque tokens checked against the database on every resolve, so revoking a grant or signing out is immediate
    // (a self-contained JWT would stay valid until it expires).
    disableJwtPlugin: true,
    storeTokens: { hash: async (token: string) => tokenHashOf(token) },
    accessTokenExpiresIn: ACCESS_TOKEN_SECONDS,
    // MCP clients register themselves (RFC 7591) before the user has signed in.
    allowDynamicClientRegistration: true,
    allowUnauthenticatedClientRegistration: true,
    resources: [resource],
    resourceSeedMode: "overwrite",
    clientRegistrationDefaultResources: [resource],
    postLogin: {
      page: OAUTH_CONSENT_PATH,
      shouldRedirect: () => false,
      // The grant is for the user's active org (the one the dashboard uses); tokens carry it as their reference id.
      consentReferenceId: async ({ user, session }) => {
        const active = typeof session.activeOrganizationId === "string" ? session.activeOrganizationId : undefined;
        const membership = await membershipOf(store, user.id, active);
        if (!membership) throw new Error("user has no organization");
        return membership.orgId;
      },
    },
  });
}

const LOOPBACK_REDIRECT = /^http:\/\/(localhost|127\.0\.0\.1|\[::1\])(:\d+)?\//i;

/**
 * MCP clients (desktop agents, the MCP Inspector) register loopback `http://localhost:<port>/callback` redirect URIs
 * without saying `application_type`, which defaults to "web", and the provider refuses http loopback redirects for
 * web clients. A client whose redirect URIs are all loopback is a native app (RFC 8252 section 7.3), so it is
 * registered as one unless it says otherwise.
 */
export const registerLoopbackClientsAsNative = createAuthMiddleware(async (ctx) => {
  if (ctx.path !== "/oauth2/register") return;
  const body = ctx.body as { application_type?: unknown; redirect_uris?: unknown } | undefined;
  if (!body || body.application_type !== undefined || !Array.isArray(body.redirect_uris) || body.redirect_uris.length === 0) return;
  if (!body.redirect_uris.every((uri) => typeof uri === "string" && LOOPBACK_REDIRECT.test(uri))) return;
  return { context: { body: { ...body, application_type: "native" } } };
});
