import { createHash, randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAuthHarness, type AuthHarness } from "../testing/auth-harness.js";

const ORIGIN = "http://127.0.0.1:3000";

const redirectHostsOn = (html: string): string[] => [...html.matchAll(/<strong class="redirect-host">([^<]*)<\/strong>/g)].map((match) => match[1]!);

describe("OAuth consent page (SECURITY-AUDIT finding 22)", () => {
  let harness: AuthHarness;
  let base: string;
  let cookie: string;
  beforeAll(async () => {
    harness = await startAuthHarness("oauthpages");
    base = `http://127.0.0.1:${harness.service.httpPort}`;
    const signUp = await fetch(`${base}/auth/sign-up/email`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: ORIGIN },
      body: JSON.stringify({ email: `consent-${randomBytes(4).toString("hex")}@example.com`, password: "correct horse battery", name: "Connie" }),
    });
    expect(signUp.status).toBe(200);
    cookie = signUp.headers.getSetCookie().find((value) => value.startsWith("rb_session="))!.split(";")[0]!;
  });
  afterAll(() => harness?.stop());

  async function register(clientName: string, redirectUris: string[]): Promise<string> {
    const response = await fetch(`${base}/auth/oauth2/register`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ client_name: clientName, redirect_uris: redirectUris, token_endpoint_auth_method: "none", grant_types: ["authorization_code"], response_types: ["code"] }),
    });
    const body = (await response.json()) as { client_id?: string };
    expect(response.status, JSON.stringify(body)).toBe(201);
    return body.client_id!;
  }

  /** A signed-in browser following an agent's authorize link lands on the consent page; returns its HTML. */
  async function consentPageFor(clientId: string, redirectUri: string): Promise<string> {
    const challenge = createHash("sha256").update(randomBytes(32).toString("base64url")).digest("base64url");
    const query = new URLSearchParams({ response_type: "code", client_id: clientId, redirect_uri: redirectUri, code_challenge: challenge, code_challenge_method: "S256", scope: "profile", state: "s" });
    const authorize = await fetch(`${base}/auth/oauth2/authorize?${query}`, { headers: { cookie, accept: "text/html" }, redirect: "manual" });
    expect([302, 303], await authorize.clone().text()).toContain(authorize.status);
    const consent = new URL(authorize.headers.get("location")!, base);
    expect(consent.pathname).toBe("/auth/oauth/consent");
    const page = await fetch(new URL(`${consent.pathname}${consent.search}`, base), { headers: { cookie } });
    expect(page.status).toBe(200);
    return page.text();
  }

  it("shows the host the authorization goes to and that a client named like a known agent is unverified", async () => {
    const clientId = await register("Claude Desktop", ["https://attacker.example/callback"]);
    const html = await consentPageFor(clientId, "https://attacker.example/callback");
    expect(html).toContain("Authorize Claude Desktop");
    expect(redirectHostsOn(html)).toEqual(["attacker.example"]);
    expect(html).toContain("Unverified application");
  });

  it("shows a loopback agent's host with its port", async () => {
    const clientId = await register("Local agent", ["http://localhost:7777/oauth/callback"]);
    const html = await consentPageFor(clientId, "http://localhost:7777/oauth/callback");
    expect(redirectHostsOn(html)).toEqual(["localhost:7777"]);
  });

  it("shows the registered redirect host, not one written into the consent page's URL", async () => {
    const clientId = await register("Honest name", ["https://real.example/callback"]);
    const challenge = createHash("sha256").update("v").digest("base64url");
    const forged = new URLSearchParams({ client_id: clientId, redirect_uri: "https://trusted.example/callback", code_challenge: challenge, scope: "profile" });
    const page = await fetch(`${base}/auth/oauth/consent?${forged}`, { headers: { cookie } });
    const html = await page.text();
    expect(redirectHostsOn(html)).toEqual(["real.example"]);
  });

  it("escapes a client name written to deceive", async () => {
    const clientId = await register('<b>Renderbus</b> "official"', ["https://x.example/cb"]);
    const html = await consentPageFor(clientId, "https://x.example/cb");
    expect(html).not.toContain("<b>Renderbus</b>");
    expect(html).toContain("&lt;b&gt;Renderbus&lt;/b&gt;");
  });
});
