import { createHash, randomBytes, randomUUID } from "node:crypto";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { UnauthorizedError, type OAuthClientProvider } from "@modelcontextprotocol/sdk/client/auth.js";
import type { OAuthClientInformationMixed, OAuthTokens } from "@modelcontextprotocol/sdk/shared/auth.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { apiRoutes } from "../services/gateway/src/routes/index.js";
import { api, createOrg, makeTestVideo, repoRoot, startFileServer, waitFor } from "./helpers.js";

/** An MCP client over Streamable HTTP that sends `Authorization: Bearer <token>`. */
async function connectMcp(gatewayUrl: string, token: string): Promise<Client> {
  const client = new Client({ name: "renderbus-e2e", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", gatewayUrl), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

/** Calls a tool and returns its structured result (the REST body), failing the test on a tool error. */
async function callOk(client: Client, name: string, args: Record<string, unknown> = {}): Promise<{ data: any; nextCursor?: string | null }> {
  const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
  const text = (result.content[0] as { text: string }).text;
  expect(JSON.parse(text)).toEqual(result.structuredContent);
  return result.structuredContent as { data: any };
}

const errorText = (result: CallToolResult): string => (result.content[0] as { text: string }).text;

/** A JSON-RPC POST to /mcp without the SDK, to look at HTTP statuses and headers. */
function rawMcpPost(gatewayUrl: string, headers: Record<string, string>) {
  return fetch(`${gatewayUrl}/mcp`, {
    method: "POST",
    headers: { "content-type": "application/json", accept: "application/json, text/event-stream", ...headers },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list", params: {} }),
  });
}

describe("MCP server at /mcp", () => {
  let system: RunningSystem;
  let media: Awaited<ReturnType<typeof startFileServer>>;
  let org: { orgId: string; key: string };
  let client: Client;
  const lines: string[] = [];

  beforeAll(async () => {
    const infra = testInfra();
    media = await startFileServer(await makeTestVideo());
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("mcp"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("mcp"),
      env: { MODE: "test", LOG_LEVEL: "info" },
      onLine: (service, line) => lines.push(`${service} ${line}`),
    });
    org = await createOrg(system.env, "scale", "MCP agents");
    client = await connectMcp(system.gatewayUrl, org.key);
  }, 120_000);

  afterAll(async () => {
    await client?.close();
    await system?.stop();
    await media?.close();
  });

  it("lists a tool for every route of the REST table (derived from the table), with object input schemas", async () => {
    const { tools } = await client.listTools();
    const names = tools.map((tool) => tool.name);
    const expected = apiRoutes
      .filter((route) => route.mcpTool !== false)
      .map((route) => route.mcpTool || route.operationId.replace(/([a-z0-9])([A-Z])/g, "$1_$2").toLowerCase());
    expect(expected.length).toBeGreaterThanOrEqual(17);
    expect([...names].sort()).toEqual([...expected].sort());
    for (const tool of tools) expect(tool.inputSchema.type).toBe("object");
    const submit = tools.find((tool) => tool.name === "submit_job")!;
    expect(submit.inputSchema.properties).toHaveProperty("idempotencyKey");
    expect(submit.description).toMatch(/same/i);
  });

  it("runs submit_job extract.metadata -> get_job until completed -> a downloadable result URL (real ffprobe)", async () => {
    const submitted = await callOk(client, "submit_job", {
      type: "extract.metadata",
      inputs: { source: media.url("clip.mp4") },
      metadata: { via: "mcp" },
      idempotencyKey: randomUUID(),
    });
    expect(submitted.data).toMatchObject({ id: expect.stringMatching(/^job_/), orgId: org.orgId, type: "extract.metadata", metadata: { via: "mcp" } });
    const jobId: string = submitted.data.id;

    const completed = await waitFor(
      async () => {
        const { data } = await callOk(client, "get_job", { jobId });
        if (data.status === "failed") throw new Error(`job failed: ${JSON.stringify(data.error)}`);
        return data.status === "completed" ? data : undefined;
      },
      { timeoutMs: 45_000, intervalMs: 500, what: "the job to complete" },
    );
    expect(completed.cost.credits).toBeGreaterThanOrEqual(1);
    const output = await fetch(completed.result.url);
    expect(output.status).toBe(200);
    expect(await output.text()).toContain("h264");

    const listed = await callOk(client, "list_jobs", { limit: 5 });
    expect(listed.data.map((job: { id: string }) => job.id)).toContain(jobId);
    expect(listed).toHaveProperty("nextCursor");
  });

  it("returns the same job for a resubmission with the same idempotencyKey", async () => {
    const idempotencyKey = randomUUID();
    const args = { type: "qr.generate", params: { content: "https://renderbus.dev" }, idempotencyKey };
    const first = await callOk(client, "submit_job", args);
    const again = await callOk(client, "submit_job", args);
    expect(again.data.id).toBe(first.data.id);
    const other = await callOk(client, "submit_job", { ...args, idempotencyKey: randomUUID() });
    expect(other.data.id).not.toBe(first.data.id);
    const reused = (await client.callTool({ name: "submit_job", arguments: { ...args, params: { content: "different" } } })) as CallToolResult;
    expect(reused.isError).toBe(true);
    expect(errorText(reused)).toMatch(/^IDEMPOTENCY_KEY_REUSED: /);
  });

  it("submits a batch with submit_batch and reads it back with get_batch", async () => {
    const submitted = await callOk(client, "submit_batch", {
      jobs: [
        { type: "qr.generate", params: { content: "one" } },
        { type: "qr.generate", params: { content: "two" } },
      ],
      idempotencyKey: randomUUID(),
    });
    expect(submitted.data).toMatchObject({ id: expect.stringMatching(/^batch_/), jobCount: 2 });
    expect(submitted.data.jobIds).toHaveLength(2);
    const batch = await callOk(client, "get_batch", { batchId: submitted.data.id });
    expect(batch.data.id).toBe(submitted.data.id);
  });

  it("cancels a job with cancel_job, and answers CONFLICT as a tool error for a second cancel", async () => {
    const submitted = await callOk(client, "submit_job", {
      type: "transcode",
      inputs: { source: media.url("clip.mp4") },
      params: { codec: "vp9" },
      idempotencyKey: randomUUID(),
    });
    const cancelled = await callOk(client, "cancel_job", { jobId: submitted.data.id });
    expect(cancelled.data.status).toBe("cancelled");
    const again = (await client.callTool({ name: "cancel_job", arguments: { jobId: submitted.data.id } })) as CallToolResult;
    expect(again.isError).toBe(true);
    expect(errorText(again)).toMatch(/^CONFLICT: /);
  });

  it("maps REST errors to tool errors carrying the code: INVALID_JOB_TYPE, VALIDATION_ERROR, NOT_FOUND", async () => {
    const unknownType = (await client.callTool({ name: "submit_job", arguments: { type: "teleport", inputs: {} } })) as CallToolResult;
    expect(unknownType.isError).toBe(true);
    expect(errorText(unknownType)).toMatch(/^INVALID_JOB_TYPE: /);
    expect(unknownType.structuredContent).toMatchObject({ error: { code: "INVALID_JOB_TYPE" } });

    const badField = (await client.callTool({ name: "list_jobs", arguments: { limit: 1000 } })) as CallToolResult;
    expect(errorText(badField)).toMatch(/^VALIDATION_ERROR: .*limit/);
    const unknownArgument = (await client.callTool({ name: "get_job", arguments: { jobId: "job_x", colour: "red" } })) as CallToolResult;
    expect(errorText(unknownArgument)).toMatch(/^VALIDATION_ERROR: .*colour/);
    const missing = (await client.callTool({ name: "get_job", arguments: { jobId: "job_00000000000000000000000000" } })) as CallToolResult;
    expect(errorText(missing)).toMatch(/^NOT_FOUND: /);
  });

  it("serves the account tools: get_org, get_balance, list_job_types, get_job_type_schema, create/list/revoke api keys", async () => {
    expect((await callOk(client, "get_org")).data).toMatchObject({ id: org.orgId, plan: "scale" });
    expect((await callOk(client, "get_balance")).data.credits).toBeGreaterThan(0);
    const types = (await callOk(client, "list_job_types")).data.map((type: { name: string }) => type.name);
    expect(types).toContain("transcode");
    expect((await callOk(client, "get_job_type_schema", { type: "thumbnail" })).data).toMatchObject({ name: "thumbnail", paramsSchema: expect.any(Object) });
    const created = await callOk(client, "create_api_key", { name: "made by an agent" });
    expect(created.data.key).toMatch(/^rb_/);
    const listed = await callOk(client, "list_api_keys");
    expect(listed.data.map((key: { id: string }) => key.id)).toContain(created.data.id);
    expect(JSON.stringify(listed)).not.toContain(created.data.key);
    expect((await callOk(client, "revoke_api_key", { keyId: created.data.id })).data.revokedAt).toEqual(expect.any(Number));
  });

  it("answers 401 with WWW-Authenticate resource_metadata for no token, a bad token and a revoked API key", async () => {
    const metadataUrl = `${system.gatewayUrl}/.well-known/oauth-protected-resource`;
    const none = await rawMcpPost(system.gatewayUrl, {});
    expect(none.status).toBe(401);
    expect(none.headers.get("www-authenticate")).toBe(`Bearer resource_metadata="${metadataUrl}"`);

    const garbage = await rawMcpPost(system.gatewayUrl, { authorization: "Bearer not-a-real-token-at-all-0123456789" });
    expect(garbage.status).toBe(401);
    expect(garbage.headers.get("www-authenticate")).toContain('error="invalid_token"');

    const { key } = await createOrg(system.env, "free", "Soon revoked");
    const agent = await connectMcp(system.gatewayUrl, key);
    await callOk(agent, "get_org");
    const keys = await api(system.gatewayUrl, org.key)("GET", "/api-keys");
    expect(keys.status).toBe(200);
    const call = api(system.gatewayUrl, key);
    const ownKeys = await call("GET", "/api-keys");
    const keyId = ownKeys.body.data.find((entry: { revokedAt: number | null }) => entry.revokedAt === null).id;
    expect((await call("DELETE", `/api-keys/${keyId}`)).status).toBe(200);

    const revoked = await rawMcpPost(system.gatewayUrl, { authorization: `Bearer ${key}` });
    expect(revoked.status).toBe(401);
    expect(revoked.headers.get("www-authenticate")).toContain(`resource_metadata="${metadataUrl}"`);
    expect(revoked.headers.get("www-authenticate")).toContain('error="invalid_token"');
    expect(await revoked.json()).toEqual({ error: { code: "UNAUTHORIZED", message: "Authentication is invalid or expired" } });
    await expect(agent.listTools()).rejects.toThrow();
    await agent.close().catch(() => undefined);

    const metadata: any = await (await fetch(metadataUrl)).json();
    expect(metadata).toMatchObject({ resource: `${system.gatewayUrl}/mcp`, authorization_servers: [expect.any(String)] });
  });

  it("applies plan checks and the plan's per-minute limit to tool calls exactly as to REST calls", { timeout: 90_000 }, async () => {
    const free = await createOrg(system.env, "free", "Free agent");
    const agent = await connectMcp(system.gatewayUrl, free.key);
    // Windows are fixed minutes: start early in one so the whole count lands in the same window.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 40_000) await new Promise((done) => setTimeout(done, 60_000 - intoMinute + 200));
    const gated = (await agent.callTool({ name: "submit_job", arguments: { type: "watermark.add", inputs: { source: media.url("clip.mp4") }, params: { text: "x" } } })) as CallToolResult;
    expect(errorText(gated)).toMatch(/^PLAN_LIMIT: /);
    // The free plan allows 10 programmatic requests per minute, REST and MCP alike: 1 tool call + 1 REST call so far.
    expect((await api(system.gatewayUrl, free.key)("GET", "/orgs/current")).status).toBe(200);
    for (let call = 0; call < 8; call += 1) await callOk(agent, "get_org");
    const limited = (await agent.callTool({ name: "get_org", arguments: {} })) as CallToolResult;
    expect(limited.isError).toBe(true);
    expect(errorText(limited)).toMatch(/^RATE_LIMITED: /);
    expect((await api(system.gatewayUrl, free.key)("GET", "/orgs/current")).status).toBe(429);
    await agent.close();
  });

  it("refuses cross-origin browser requests (Origin check)", async () => {
    const response = await rawMcpPost(system.gatewayUrl, { authorization: `Bearer ${org.key}`, origin: "https://evil.example" });
    expect(response.status).toBe(403);
  });

  describe("OAuth 2.1 for agents (Better Auth OAuth provider)", () => {
    const redirectUri = "http://127.0.0.1:9/callback";
    const email = `agent-owner-${Date.now()}@example.com`;
    const password = "correct horse battery staple";
    let metadata: Record<string, any>;
    let clientId: string;
    let cookie: string;
    let tokens: { access_token: string; refresh_token?: string; expires_in: number; token_type: string };

    const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();
    const pkce = () => {
      const verifier = randomBytes(32).toString("base64url");
      return { verifier, challenge: createHash("sha256").update(verifier).digest("base64url") };
    };

    /** Register -> sign in -> authorize (PKCE) -> consent page -> code -> token, as a browser + an agent would. */
    async function authorizeAgent(resource: string | undefined) {
      const { verifier, challenge } = pkce();
      const state = randomUUID();
      const query = new URLSearchParams({
        response_type: "code",
        client_id: clientId,
        redirect_uri: redirectUri,
        code_challenge: challenge,
        code_challenge_method: "S256",
        scope: "profile offline_access",
        state,
        ...(resource ? { resource } : {}),
      });
      const authorize = await fetch(`${metadata.authorization_endpoint}?${query}`, { headers: { cookie, accept: "text/html" }, redirect: "manual" });
      expect([302, 303]).toContain(authorize.status);
      let location = new URL(authorize.headers.get("location")!, system.gatewayUrl);
      if (location.pathname === "/auth/oauth/consent") {
        const consentPage = await fetch(location, { headers: { cookie } });
        expect(consentPage.status).toBe(200);
        const html = await consentPage.text();
        expect(html).toContain("Authorize MCP e2e agent");
        const oauthQuery = /name="oauth_query" value="([^"]*)"/.exec(html)![1]!.replaceAll("&amp;", "&");
        const decided = await fetch(`${system.gatewayUrl}/auth/oauth/consent`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded", origin: system.gatewayUrl, cookie },
          body: form({ decision: "allow", oauth_query: oauthQuery }),
          redirect: "manual",
        });
        expect(decided.status).toBe(303);
        location = new URL(decided.headers.get("location")!);
      }
      expect(`${location.origin}${location.pathname}`).toBe(redirectUri);
      expect(location.searchParams.get("state")).toBe(state);
      const code = location.searchParams.get("code")!;
      expect(code).toBeTruthy();
      const exchanged = await fetch(metadata.token_endpoint, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
        body: form({ grant_type: "authorization_code", code, redirect_uri: redirectUri, client_id: clientId, code_verifier: verifier, ...(resource ? { resource } : {}) }),
      });
      const body: any = await exchanged.json();
      expect(exchanged.status, JSON.stringify(body)).toBe(200);
      return body as typeof tokens;
    }

    it("publishes protected-resource and authorization-server metadata at the well-known paths", async () => {
      const resourceMetadata: any = await (await fetch(`${system.gatewayUrl}/.well-known/oauth-protected-resource/mcp`)).json();
      expect(resourceMetadata.resource).toBe(`${system.gatewayUrl}/mcp`);
      const issuer: string = resourceMetadata.authorization_servers[0];
      const issuerPath = new URL(issuer).pathname;
      const response = await fetch(`${system.gatewayUrl}/.well-known/oauth-authorization-server${issuerPath === "/" ? "" : issuerPath}`);
      expect(response.status).toBe(200);
      metadata = (await response.json()) as Record<string, any>;
      expect(metadata).toMatchObject({ issuer, code_challenge_methods_supported: expect.arrayContaining(["S256"]) });
      expect(metadata.registration_endpoint).toBeTruthy();
      expect(metadata.grant_types_supported).toEqual(expect.arrayContaining(["authorization_code", "refresh_token"]));
    });

    it("registers a client dynamically, signs a user in on the consent page flow, exchanges the code with PKCE and calls tools with the token", async () => {
      const registered = await fetch(metadata.registration_endpoint, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({
          client_name: "MCP e2e agent",
          redirect_uris: [redirectUri],
          token_endpoint_auth_method: "none",
          grant_types: ["authorization_code", "refresh_token"],
          response_types: ["code"],
        }),
      });
      const client: any = await registered.json();
      expect(registered.status, JSON.stringify(client)).toBeLessThan(300);
      clientId = client.client_id;
      expect(clientId).toBeTruthy();

      // The authorize endpoint sends a signed-out browser to the sign-in page, which signs up and continues the flow.
      const { challenge } = pkce();
      const authorize = await fetch(
        `${metadata.authorization_endpoint}?${new URLSearchParams({ response_type: "code", client_id: clientId, redirect_uri: redirectUri, code_challenge: challenge, code_challenge_method: "S256", scope: "profile offline_access", resource: `${system.gatewayUrl}/mcp`, state: "s1" })}`,
        { headers: { accept: "text/html" }, redirect: "manual" },
      );
      expect([302, 303], await authorize.clone().text()).toContain(authorize.status);
      const signInUrl = new URL(authorize.headers.get("location")!, system.gatewayUrl);
      expect(signInUrl.pathname).toBe("/auth/oauth/sign-in");
      const signInPage = await fetch(signInUrl);
      expect(signInPage.status).toBe(200);
      expect(await signInPage.text()).toContain("Sign in to Renderbus");
      const signedUp = await fetch(`${system.gatewayUrl}/auth/oauth/sign-in`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", origin: system.gatewayUrl },
        body: form({ mode: "sign-up", email, password, name: "Agent Owner", oauth_query: signInUrl.search.slice(1) }),
        redirect: "manual",
      });
      expect(signedUp.status).toBe(303);
      cookie = signedUp.headers.getSetCookie().find((line) => line.startsWith("rb_session="))!.split(";")[0]!;
      expect(cookie).toBeTruthy();
      expect(new URL(signedUp.headers.get("location")!, system.gatewayUrl).pathname).toBe("/auth/oauth/consent");

      tokens = await authorizeAgent(`${system.gatewayUrl}/mcp`);
      expect(tokens.token_type.toLowerCase()).toBe("bearer");
      expect(tokens.refresh_token).toBeTruthy();

      const agent = await connectMcp(system.gatewayUrl, tokens.access_token);
      const orgData = (await callOk(agent, "get_org")).data;
      expect(orgData).toMatchObject({ id: expect.stringMatching(/^org_/), plan: "free" });
      const job = await callOk(agent, "submit_job", { type: "qr.generate", params: { content: "oauth" }, idempotencyKey: randomUUID() });
      expect(job.data.orgId).toBe(orgData.id);
      // The grant cannot mint a key that would outlive its revocation.
      const minted = await agent.callTool({ name: "create_api_key", arguments: { name: "outlives the grant" } });
      expect(minted.isError).toBe(true);
      expect(JSON.stringify(minted.content)).toContain("FORBIDDEN: An OAuth token cannot create API keys");
      expect((await agent.listTools()).tools.length).toBeGreaterThanOrEqual(17);
      await agent.close();

      // The token is for /mcp only: the REST API refuses it.
      expect((await fetch(`${system.gatewayUrl}/orgs/current`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).status).toBe(401);
    });

    it("lets the SDK's own OAuth client discover, register, authorize with PKCE and call tools (the flow an MCP client runs)", async () => {
      let clientInformation: OAuthClientInformationMixed | undefined;
      let savedTokens: OAuthTokens | undefined;
      let savedVerifier = "";
      let authorizationUrl: URL | undefined;
      const provider: OAuthClientProvider = {
        redirectUrl: "http://localhost:7777/oauth/callback",
        clientMetadata: { client_name: "SDK agent", redirect_uris: ["http://localhost:7777/oauth/callback"], grant_types: ["authorization_code", "refresh_token"], response_types: ["code"], token_endpoint_auth_method: "none" },
        clientInformation: () => clientInformation,
        saveClientInformation: (information) => void (clientInformation = information),
        tokens: () => savedTokens,
        saveTokens: (tokens) => void (savedTokens = tokens),
        redirectToAuthorization: (url) => void (authorizationUrl = url),
        saveCodeVerifier: (verifier) => void (savedVerifier = verifier),
        codeVerifier: () => savedVerifier,
      };
      const mcpUrl = new URL("/mcp", system.gatewayUrl);
      const first = new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider });
      await expect(new Client({ name: "sdk-agent", version: "1.0.0" }).connect(first)).rejects.toBeInstanceOf(UnauthorizedError);
      expect(clientInformation?.client_id).toBeTruthy();
      expect(authorizationUrl!.searchParams.get("resource")).toBe(`${system.gatewayUrl}/mcp`);
      expect(authorizationUrl!.searchParams.get("code_challenge_method")).toBe("S256");

      // The user's browser: already signed in (cookie), approves on the consent page, lands on the callback.
      const authorize = await fetch(authorizationUrl!, { headers: { cookie, accept: "text/html" }, redirect: "manual" });
      const consentUrl = new URL(authorize.headers.get("location")!, system.gatewayUrl);
      expect(consentUrl.pathname).toBe("/auth/oauth/consent");
      const html = await (await fetch(consentUrl, { headers: { cookie } })).text();
      expect(html).toContain("Authorize SDK agent");
      const decided = await fetch(`${system.gatewayUrl}/auth/oauth/consent`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", origin: system.gatewayUrl, cookie },
        body: form({ decision: "allow", oauth_query: consentUrl.search.slice(1) }),
        redirect: "manual",
      });
      const callback = new URL(decided.headers.get("location")!);
      expect(`${callback.origin}${callback.pathname}`).toBe("http://localhost:7777/oauth/callback");
      await first.finishAuth(callback.searchParams.get("code")!);
      expect(savedTokens?.access_token).toBeTruthy();
      expect(savedTokens?.refresh_token).toBeTruthy();

      const agent = new Client({ name: "sdk-agent", version: "1.0.0" });
      await agent.connect(new StreamableHTTPClientTransport(mcpUrl, { authProvider: provider }));
      expect((await callOk(agent, "get_org")).data.plan).toBe("free");
      await agent.close();
    });

    it("refreshes the access token with the refresh token", async () => {
      const refreshed = await fetch(metadata.token_endpoint, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", accept: "application/json" },
        body: form({ grant_type: "refresh_token", refresh_token: tokens.refresh_token!, client_id: clientId, resource: `${system.gatewayUrl}/mcp` }),
      });
      const body: any = await refreshed.json();
      expect(refreshed.status, JSON.stringify(body)).toBe(200);
      expect(body.access_token).not.toBe(tokens.access_token);
      const agent = await connectMcp(system.gatewayUrl, body.access_token);
      expect((await callOk(agent, "get_balance")).data.credits).toBeGreaterThanOrEqual(0);
      await agent.close();
      tokens = body;
    });

    it("refuses a token not issued for /mcp, an expired token and a revoked token with 401 and WWW-Authenticate", async () => {
      const challenge = `Bearer resource_metadata="${system.gatewayUrl}/.well-known/oauth-protected-resource"`;
      const expectRefused = async (token: string) => {
        const response = await rawMcpPost(system.gatewayUrl, { authorization: `Bearer ${token}` });
        expect(response.status).toBe(401);
        expect(response.headers.get("www-authenticate")).toContain(challenge);
      };

      const noResource = await authorizeAgent(undefined);
      await expectRefused(noResource.access_token);

      const expiring = await authorizeAgent(`${system.gatewayUrl}/mcp`);
      expect((await rawMcpPost(system.gatewayUrl, { authorization: `Bearer ${expiring.access_token}` })).status).toBe(200);
      const pool = new pg.Pool({ connectionString: system.env.DATABASE_URL, max: 1 });
      try {
        const hash = createHash("sha256").update(expiring.access_token).digest("hex");
        const updated = await pool.query(`update auth."oauthAccessToken" set "expiresAt" = now() - interval '1 second' where token = $1`, [hash]);
        expect(updated.rowCount).toBe(1);
      } finally {
        await pool.end();
      }
      await expectRefused(expiring.access_token);

      const revoking = await authorizeAgent(`${system.gatewayUrl}/mcp`);
      expect((await rawMcpPost(system.gatewayUrl, { authorization: `Bearer ${revoking.access_token}` })).status).toBe(200);
      const revoked = await fetch(metadata.revocation_endpoint, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: form({ token: revoking.access_token, token_type_hint: "access_token", client_id: clientId }),
      });
      expect(revoked.status).toBe(200);
      await expectRefused(revoking.access_token);
    });

    it("cuts the agent off at once when the user signs out", async () => {
      expect((await rawMcpPost(system.gatewayUrl, { authorization: `Bearer ${tokens.access_token}` })).status).toBe(200);
      const signedOut = await fetch(`${system.gatewayUrl}/auth/sign-out`, { method: "POST", headers: { cookie, origin: system.gatewayUrl, "content-type": "application/json" }, body: "{}" });
      expect(signedOut.status).toBe(200);
      const response = await rawMcpPost(system.gatewayUrl, { authorization: `Bearer ${tokens.access_token}` });
      expect(response.status).toBe(401);
    });
  });
});
