/**
 * OAuth scopes advertised for `/mcp` (the auth service's OAuth provider accepts the same list). Access to `/mcp` is
 * all-or-nothing, the org's whole API as with an API key; `offline_access` gets a refresh token so the agent keeps
 * access without another sign-in.
 */
export const MCP_SCOPES = ["profile", "email", "offline_access"];
