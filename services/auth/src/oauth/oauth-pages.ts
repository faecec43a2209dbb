import type { IncomingMessage, ServerResponse } from "node:http";
import type { AuthConfig } from "../config.js";
import type { AuthResources } from "../auth-resources.js";
import { membershipOf } from "../orgs/membership.js";
import { AUTH_BASE_PATH, type RenderbusAuth } from "../sessions/better-auth.js";
import { OAUTH_CONSENT_PATH, OAUTH_SIGN_IN_PATH } from "./oauth-provider.js";

const MAX_FORM_BYTES = 16 * 1024;

const SCOPE_TEXT: Record<string, string> = {
  profile: "See your name",
  email: "See your email address",
  offline_access: "Keep access until you revoke it or sign out (refresh token)",
};

/**
 * The sign-in and consent pages of the OAuth flow, server-rendered HTML. Better Auth's authorize endpoint sends the
 * browser here with a signed query; the forms post back here, and these handlers call Better Auth's own sign-in and
 * consent endpoints (with `oauth_query`), then redirect the browser to wherever Better Auth says: the consent page,
 * or the agent's redirect URI with the authorization code.
 * @returns false when the request is not for one of these pages.
 */
export async function handleOAuthPage(
  request: IncomingMessage,
  response: ServerResponse,
  deps: { betterAuth: RenderbusAuth; store: AuthResources; config: AuthConfig },
): Promise<boolean> {
  const url = new URL(request.url ?? "/", deps.config.PUBLIC_URL);
  if (url.pathname !== OAUTH_SIGN_IN_PATH && url.pathname !== OAUTH_CONSENT_PATH) return false;
  const method = request.method ?? "GET";
  if (method !== "GET" && method !== "POST") {
    response.writeHead(405, { allow: "GET, POST" }).end();
    return true;
  }
  if (method === "POST" && !sameOrigin(request, deps.config.PUBLIC_URL)) {
    sendHtml(response, 403, page("Request refused", "<p>This form can only be sent from Renderbus itself.</p>"));
    return true;
  }
  if (url.pathname === OAUTH_SIGN_IN_PATH) {
    if (method === "GET") sendHtml(response, 200, signInPage(url.search.slice(1)));
    else await submitSignIn(request, response, deps);
  } else if (method === "GET") await showConsent(request, response, url, deps);
  else await submitConsent(request, response, deps);
  return true;
}

async function submitSignIn(request: IncomingMessage, response: ServerResponse, deps: { betterAuth: RenderbusAuth; config: AuthConfig }) {
  const form = await readForm(request);
  const oauthQuery = form.get("oauth_query") ?? "";
  const signUp = form.get("mode") === "sign-up";
  const email = form.get("email") ?? "";
  const body = signUp
    ? // The confirmation link (where addresses are confirmed) lands on the dashboard, where the credits it releases show.
      { email, password: form.get("password") ?? "", name: form.get("name") || email.split("@")[0] || "Renderbus user", oauth_query: oauthQuery, callbackURL: "/app/billing" }
    : { email, password: form.get("password") ?? "", oauth_query: oauthQuery };
  const result = await callBetterAuth(deps, signUp ? "/sign-up/email" : "/sign-in/email", body, request);
  const location = redirectOf(result.json);
  if (!result.ok || !location) {
    const message = signUp ? "Could not create the account (is the email already registered, the password 8+ characters?)" : "Invalid email or password";
    sendHtml(response, 401, signInPage(oauthQuery, message));
    return;
  }
  response.writeHead(303, { location, "set-cookie": result.cookies, "cache-control": "no-store" }).end();
}

async function showConsent(request: IncomingMessage, response: ServerResponse, url: URL, deps: { betterAuth: RenderbusAuth; store: AuthResources; config: AuthConfig }) {
  const session = await deps.betterAuth.api.getSession({ headers: new Headers({ cookie: request.headers.cookie ?? "" }) }).catch(() => null);
  if (!session) {
    response.writeHead(303, { location: `${OAUTH_SIGN_IN_PATH}${url.search}` }).end();
    return;
  }
  const clientId = url.searchParams.get("client_id") ?? "";
  const { rows } = await deps.store.pool.query<{ name: string | null; redirectUris: unknown }>(`select name, "redirectUris" from "oauthClient" where "clientId" = $1`, [clientId]);
  const clientName = rows[0]?.name || clientId;
  const redirectTargets = redirectTargetsOf(url.searchParams.get("redirect_uri"), redirectUrisOf(rows[0]?.redirectUris));
  const membership = await membershipOf(deps.store, session.user.id, session.session.activeOrganizationId);
  const org = membership ? await deps.store.db.selectFrom("organization").select(["name"]).where("id", "=", membership.orgId).executeTakeFirst() : undefined;
  const scopes = (url.searchParams.get("scope") ?? "").split(" ").filter(Boolean);
  sendHtml(response, 200, consentPage({ clientName, redirectTargets, email: session.user.email, orgName: org?.name ?? "your organization", scopes, oauthQuery: url.search.slice(1) }));
}

/** The client's registered redirect URIs (stored as a JSON array in text, or as an array). */
function redirectUrisOf(stored: unknown): string[] {
  let value = stored;
  if (typeof value === "string") {
    try {
      value = JSON.parse(value);
    } catch {
      value = [value];
    }
  }
  return Array.isArray(value) ? value.filter((uri): uri is string => typeof uri === "string") : [];
}

/**
 * Where the authorization code will be sent, as the user should judge it: the host of the redirect URI. The one in
 * the request is shown only if it is one the client registered (Better Auth refuses any other, and the query on this
 * page's URL is not trusted until Better Auth checks its signature); otherwise every registered one is.
 */
function redirectTargetsOf(requested: string | null, registered: string[]): string[] {
  const uris = requested !== null && registered.includes(requested) ? [requested] : registered;
  return [...new Set(uris.map(redirectTargetOf))];
}

function redirectTargetOf(uri: string): string {
  try {
    const url = new URL(uri);
    if (url.protocol === "http:" || url.protocol === "https:") return url.host;
    return url.host ? `${url.protocol}//${url.host}` : url.protocol;
  } catch {
    return uri;
  }
}

async function submitConsent(request: IncomingMessage, response: ServerResponse, deps: { betterAuth: RenderbusAuth; config: AuthConfig }) {
  const form = await readForm(request);
  const result = await callBetterAuth(deps, "/oauth2/consent", { accept: form.get("decision") === "allow", oauth_query: form.get("oauth_query") ?? "" }, request);
  const location = redirectOf(result.json);
  if (!result.ok || !location) {
    sendHtml(response, 400, page("Authorization failed", "<p>This authorization request is invalid or has expired. Start again from your agent.</p>"));
    return;
  }
  response.writeHead(303, { location, "cache-control": "no-store" }).end();
}

/**
 * Calls a Better Auth endpoint in-process, as a same-origin JSON request (its CSRF check sees our own origin). The
 * client IP the gateway stated travels along, so Better Auth's own limiter counts the page's sign-ins per client
 * rather than in one bucket for everyone; the gateway counts them per account and per IP before they get here.
 */
async function callBetterAuth(deps: { betterAuth: RenderbusAuth; config: AuthConfig }, path: string, body: unknown, request: IncomingMessage) {
  const origin = new URL(deps.config.PUBLIC_URL).origin;
  const headers = new Headers({ "content-type": "application/json", accept: "application/json", origin });
  const { cookie } = request.headers;
  if (cookie) headers.set("cookie", cookie);
  const forwardedFor = request.headers["x-forwarded-for"];
  if (typeof forwardedFor === "string") headers.set("x-forwarded-for", forwardedFor);
  const response = await deps.betterAuth.handler(
    new Request(new URL(`${AUTH_BASE_PATH}${path}`, deps.config.PUBLIC_URL), { method: "POST", headers, body: JSON.stringify(body) }),
  );
  const json: unknown = await response.json().catch(() => undefined);
  return { ok: response.ok, json, cookies: response.headers.getSetCookie() };
}

/** Better Auth answers a JSON caller with `{redirect: true, url}` (authorize) or `{redirect_uri}` (consent). */
function redirectOf(json: unknown): string | undefined {
  if (!json || typeof json !== "object") return undefined;
  const body = json as { url?: unknown; redirect_uri?: unknown };
  if (typeof body.url === "string") return body.url;
  if (typeof body.redirect_uri === "string") return body.redirect_uri;
  return undefined;
}

function sameOrigin(request: IncomingMessage, publicUrl: string): boolean {
  const origin = request.headers.origin;
  // Browsers send Origin on every form POST; a missing one is a non-browser client, which CSRF cannot involve.
  return origin === undefined || origin === new URL(publicUrl).origin;
}

async function readForm(request: IncomingMessage): Promise<URLSearchParams> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request) {
    size += (chunk as Buffer).length;
    if (size > MAX_FORM_BYTES) break;
    chunks.push(chunk as Buffer);
  }
  return new URLSearchParams(Buffer.concat(chunks).toString("utf8"));
}

function sendHtml(response: ServerResponse, status: number, html: string): void {
  response
    .writeHead(status, {
      "content-type": "text/html; charset=utf-8",
      "cache-control": "no-store",
      // Sign-in and consent pages must never be framed (clickjacking a consent click).
      "x-frame-options": "DENY",
      "content-security-policy": "default-src 'none'; style-src 'unsafe-inline'; frame-ancestors 'none'",
    })
    .end(html);
}

const escapeHtml = (text: string): string =>
  text.replace(/[&<>"']/g, (character) => ({ "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" })[character]!);

function page(title: string, body: string): string {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escapeHtml(title)} · Renderbus</title>
<style>body{font-family:system-ui,sans-serif;background:#f5f6f8;margin:0;display:flex;justify-content:center;padding:48px 16px}
main{background:#fff;border-radius:12px;box-shadow:0 1px 4px #0002;padding:32px;max-width:420px;width:100%}
h1{font-size:1.3rem;margin-top:0}label{display:block;margin:12px 0 4px;font-size:.9rem}
input[type=email],input[type=password],input[type=text]{width:100%;box-sizing:border-box;padding:8px;border:1px solid #ccd;border-radius:6px}
button{margin-top:16px;padding:9px 16px;border-radius:6px;border:0;background:#3056d3;color:#fff;font-size:1rem;cursor:pointer}
button.secondary{background:#e4e6eb;color:#222;margin-left:8px}.error{color:#b00020}
.warning{background:#fff4e5;border-left:4px solid #e8a317;padding:8px 12px}ul{padding-left:20px}</style></head>
<body><main>${body}</main></body></html>`;
}

function signInPage(oauthQuery: string, error?: string): string {
  return page(
    "Sign in",
    `<h1>Sign in to Renderbus</h1><p>An application wants to use Renderbus on your behalf. Sign in to continue.</p>
${error ? `<p class="error">${escapeHtml(error)}</p>` : ""}
<form method="post" action="${OAUTH_SIGN_IN_PATH}">
<input type="hidden" name="oauth_query" value="${escapeHtml(oauthQuery)}">
<label for="email">Email</label><input id="email" type="email" name="email" required autocomplete="email">
<label for="password">Password</label><input id="password" type="password" name="password" required minlength="8" autocomplete="current-password">
<label for="name">Name (new accounts only)</label><input id="name" type="text" name="name" autocomplete="name">
<button type="submit" name="mode" value="sign-in">Sign in</button><button class="secondary" type="submit" name="mode" value="sign-up">Create account</button>
</form>`,
  );
}

/**
 * Every client registered itself (RFC 7591 dynamic registration, open to anyone, since MCP agents must): its name is
 * whatever it chose, "Claude Desktop" included (SECURITY-AUDIT finding 22). So the page says the client is
 * unverified, and shows the host the authorization goes to, which the name cannot fake.
 */
function consentPage(view: { clientName: string; redirectTargets: string[]; email: string; orgName: string; scopes: string[]; oauthQuery: string }): string {
  const scopes = view.scopes.map((scope) => `<li>${escapeHtml(SCOPE_TEXT[scope] ?? scope)}</li>`).join("");
  const targets = view.redirectTargets.map((target) => `<strong class="redirect-host">${escapeHtml(target)}</strong>`).join(", ") || "<strong>an unknown address</strong>";
  return page(
    "Authorize",
    `<h1>Authorize ${escapeHtml(view.clientName)}</h1>
<p class="warning"><strong>Unverified application.</strong> &ldquo;${escapeHtml(view.clientName)}&rdquo; registered itself and chose
that name; Renderbus has not checked who runs it. Continue only if you just started this from an agent you trust.</p>
<p>If you allow, access is handed to ${targets}.</p>
<p><strong>${escapeHtml(view.clientName)}</strong> wants to use the Renderbus API (MCP tools) for
<strong>${escapeHtml(view.orgName)}</strong>, signed in as ${escapeHtml(view.email)}: submit and cancel jobs, read results,
manage API keys and webhooks, and spend the organization's credits.</p>
${scopes ? `<ul>${scopes}</ul>` : ""}
<form method="post" action="${OAUTH_CONSENT_PATH}">
<input type="hidden" name="oauth_query" value="${escapeHtml(view.oauthQuery)}">
<button type="submit" name="decision" value="allow">Allow</button><button class="secondary" type="submit" name="decision" value="deny">Deny</button>
</form>`,
  );
}
