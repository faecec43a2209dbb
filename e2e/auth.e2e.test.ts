import fc from "fast-check";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { api, createOrg, csrfTokenOf, repoRoot } from "./helpers.js";

const UNAUTHORIZED_BODY = { error: { code: "UNAUTHORIZED", message: "Authentication is invalid or expired" } };

describe("authentication, API keys and rate limits through two gateway replicas", () => {
  let system: RunningSystem;
  let secondGateway: string;
  const lines: string[] = [];

  beforeAll(async () => {
    const infra = testInfra();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("authe2e"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("authe2e"),
      env: { MODE: "test", LOG_LEVEL: "info", PLANS_JSON: JSON.stringify({ starter: { requestsPerMinute: 1000 }, pro: { requestsPerMinute: 1000 } }) },
      onLine: (service, line) => lines.push(`${service} ${line}`),
    });
    secondGateway = await system.addGateway();
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
  });

  it("shows a new key once, lists it without the secret, and answers 401 on the very next request through another replica once revoked", async () => {
    const { key } = await createOrg(system.env, "pro", "Keys");
    const first = api(system.gatewayUrl, key);
    const created = await first("POST", "/api-keys", { name: "ci" });
    expect(created.status).toBe(201);
    const newKey: string = created.body.data.key;
    expect(newKey).toMatch(/^rb_[A-Za-z0-9_-]{43,}$/);
    expect(created.body.data).toMatchObject({ name: "ci", id: expect.stringMatching(/^key_/), start: newKey.slice(0, created.body.data.start.length) });

    const listed = await first("GET", "/api-keys");
    expect(JSON.stringify(listed.body)).not.toContain(newKey);
    expect(listed.body.data.map((k: { id: string }) => k.id)).toContain(created.body.data.id);

    // Warm the second replica's cache with the new key, then revoke through the first replica.
    const viaSecond = api(secondGateway, newKey);
    expect((await viaSecond("GET", "/me")).status).toBe(200);
    expect((await first("DELETE", `/api-keys/${created.body.data.id}`)).status).toBe(200);
    const after = await viaSecond("GET", "/me");
    expect(after.status).toBe(401);
    expect(after.body).toEqual(UNAUTHORIZED_BODY);
    expect(after.headers.get("www-authenticate")).toMatch(/^Bearer/);
  });

  it("lets a key create a key, and keeps orgs apart (404 for another org's key)", async () => {
    const a = await createOrg(system.env, "pro", "A");
    const b = await createOrg(system.env, "pro", "B");
    const made = await api(system.gatewayUrl, a.key)("POST", "/api-keys", { name: "made by a key" });
    expect(made.status).toBe(201);
    const asB = api(system.gatewayUrl, b.key);
    expect((await asB("DELETE", `/api-keys/${made.body.data.id}`)).status).toBe(404);
    expect((await asB("GET", "/api-keys")).body.data.map((k: { id: string }) => k.id)).not.toContain(made.body.data.id);
    expect((await api(system.gatewayUrl, made.body.data.key)("GET", "/me")).body.data).toMatchObject({ orgId: a.orgId, plan: "pro" });
  });

  it("rejects a missing name and names longer than 100 characters with VALIDATION_ERROR", async () => {
    const { key } = await createOrg(system.env, "pro", "Names");
    const call = api(system.gatewayUrl, key);
    for (const body of [{}, { name: "" }, { name: "x".repeat(101) }, { name: "ok", extra: 1 }]) {
      const response = await call("POST", "/api-keys", body);
      expect(response.status).toBe(400);
      expect(response.body.error.code).toBe("VALIDATION_ERROR");
    }
  });

  it("answers every kind of bad credential with exactly the documented 401 body", async () => {
    const cases: Record<string, string>[] = [
      {},
      { authorization: "Bearer" },
      { authorization: "Basic dXNlcjpwYXNz" },
      { authorization: "Bearer rb_short" },
      { authorization: `Bearer rb_${"A".repeat(43)}` },
      { cookie: "rb_session=not-a-session" },
    ];
    for (const headers of cases) {
      const response = await fetch(`${system.gatewayUrl}/me`, { headers });
      expect(response.status).toBe(401);
      expect(await response.json()).toEqual(UNAUTHORIZED_BODY);
      expect(response.headers.get("www-authenticate")).toMatch(/^Bearer/);
    }
  });

  it("never answers 5xx for arbitrary Authorization and Cookie header values", async () => {
    const headerValue = fc.string({ maxLength: 300 }).filter((value) => /^[\t\x20-\x7e]*$/.test(value));
    await fc.assert(
      fc.asyncProperty(headerValue, headerValue, fc.boolean(), async (authorization, cookie, bearer) => {
        const response = await fetch(`${system.gatewayUrl}/jobs`, {
          headers: { authorization: bearer ? `Bearer ${authorization}` : authorization, cookie: `rb_session=${cookie}` },
        });
        await response.arrayBuffer();
        return response.status < 500;
      }),
      { numRuns: 150 },
    );
  });

  it("gives a free org exactly 10 successful requests per minute in total across two replicas, then 429 with Retry-After", async () => {
    const { key } = await createOrg(system.env, "free", "Limited");
    // Stay inside one fixed window: start early in a minute.
    const intoMinute = Date.now() % 60_000;
    if (intoMinute > 45_000) await new Promise((done) => setTimeout(done, 60_000 - intoMinute + 100));
    const replicas = [api(system.gatewayUrl, key), api(secondGateway, key)];
    const responses = await Promise.all(Array.from({ length: 24 }, (_, index) => replicas[index % 2]!("GET", "/me")));
    expect(responses.filter((response) => response.status === 200)).toHaveLength(10);
    const limited = responses.filter((response) => response.status === 429);
    expect(limited).toHaveLength(14);
    expect(limited[0]!.body.error.code).toBe("RATE_LIMITED");
    expect(Number(limited[0]!.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(limited[0]!.headers.get("ratelimit-limit")).toBe("10");
    expect(responses[0]!.headers.get("ratelimit-remaining")).not.toBeNull();
  });

  it("PATCH /orgs: 403 PLAN_LIMIT on free, accepted on starter without ever returning or logging the secret", async () => {
    const free = await createOrg(system.env, "free", "Free");
    const refused = await api(system.gatewayUrl, free.key)("PATCH", `/orgs/${free.orgId}`, { webhookUrl: "https://example.com/hook", webhookSecret: "s3cr3t-value-free" });
    expect(refused.status).toBe(403);
    expect(refused.body.error.code).toBe("PLAN_LIMIT");

    const starter = await createOrg(system.env, "starter", "Starter");
    const secret = "s3cr3t-value-starter-9f8e7d";
    const call = api(system.gatewayUrl, starter.key);
    const accepted = await call("PATCH", `/orgs/${starter.orgId}`, { webhookUrl: "https://example.com/hook", webhookSecret: secret });
    expect(accepted.status).toBe(200);
    expect(accepted.body.data).toMatchObject({ webhookUrl: "https://example.com/hook", webhookSecretSet: true });
    const current = await call("GET", "/orgs/current");
    // The plan's limits as enforced (this run's PLANS_JSON included), so a client need not copy the plan table.
    expect(current.body.data.limits).toMatchObject({ requestsPerMinute: 1000, concurrency: 5, monthlyCredits: 1900, webhooks: true, jobTypes: "all" });
    expect(JSON.stringify([accepted.body, current.body])).not.toContain(secret);
    expect(lines.join("\n")).not.toContain(secret);

    const other = await call("PATCH", `/orgs/${free.orgId}`, { webhookUrl: "https://example.com/x" });
    expect(other.status).toBe(404);
  });

  it("signs up and in through the gateway with an rb_session cookie, refuses cross-site writes, and signs out server-side", async () => {
    const origin = system.gatewayUrl;
    const email = `user${Date.now()}@example.com`;
    const signUp = await fetch(`${origin}/auth/sign-up/email`, {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ email, password: "correct horse battery", name: "Dana" }),
    });
    expect(signUp.status).toBe(200);
    const setCookie = signUp.headers.getSetCookie().find((cookie) => cookie.startsWith("rb_session="));
    expect(setCookie).toBeDefined();
    expect(setCookie).toMatch(/HttpOnly/i);
    expect(setCookie).toMatch(/SameSite=Lax/i);
    expect(setCookie).not.toMatch(/Secure/i); // PUBLIC_URL is http here
    expect(setCookie).toMatch(/Max-Age=2592000/);
    const cookie = setCookie!.split(";")[0]!;

    const me = await fetch(`${origin}/me`, { headers: { cookie } });
    expect(me.status).toBe(200);
    expect(((await me.json()) as { data: unknown }).data).toMatchObject({ plan: "free", orgId: expect.stringMatching(/^org_/) });

    const crossSite = await fetch(`${origin}/api-keys`, {
      method: "POST",
      headers: { cookie, origin: "https://evil.example", "content-type": "application/json" },
      body: JSON.stringify({ name: "stolen" }),
    });
    expect(crossSite.status).toBe(403);
    // Same origin but without the session's CSRF token (a script elsewhere driving the cookie): refused too.
    const withoutToken = await fetch(`${origin}/api-keys`, {
      method: "POST",
      headers: { cookie, origin, "content-type": "application/json" },
      body: JSON.stringify({ name: "no token" }),
    });
    expect(withoutToken.status).toBe(403);
    const sameSite = await fetch(`${origin}/api-keys`, {
      method: "POST",
      headers: { cookie, origin, "content-type": "application/json", "x-csrf-token": await csrfTokenOf(origin, cookie) },
      body: JSON.stringify({ name: "from the dashboard" }),
    });
    expect(sameSite.status).toBe(201);

    const signOut = await fetch(`${origin}/auth/sign-out`, { method: "POST", headers: { cookie, origin, "content-type": "application/json" }, body: "{}" });
    expect(signOut.status).toBe(200);
    const afterSignOut = await fetch(`${origin}/me`, { headers: { cookie } });
    expect(afterSignOut.status).toBe(401);
    expect(await afterSignOut.json()).toEqual(UNAUTHORIZED_BODY);

    const signIn = await fetch(`${origin}/auth/sign-in/email`, {
      method: "POST",
      headers: { "content-type": "application/json", origin },
      body: JSON.stringify({ email, password: "correct horse battery" }),
    });
    expect(signIn.status).toBe(200);
    expect(signIn.headers.getSetCookie().some((c) => c.startsWith("rb_session="))).toBe(true);
  });

  it("manages members through the gateway: invite, accept, role-gated keys, removal, and no cross-site invites", async () => {
    const origin = system.gatewayUrl;
    const signUp = async (name: string) => {
      const email = `${name}${Date.now()}${Math.random().toString(36).slice(2, 6)}@example.com`;
      const response = await fetch(`${origin}/auth/sign-up/email`, {
        method: "POST",
        headers: { "content-type": "application/json", origin },
        body: JSON.stringify({ email, password: "correct horse battery", name }),
      });
      expect(response.status).toBe(200);
      const cookie = response.headers.getSetCookie().find((value) => value.startsWith("rb_session="))!.split(";")[0]!;
      const post = async (base: string, path: string, body: unknown, from = origin) =>
        fetch(`${base}${path}`, { method: "POST", headers: { cookie, origin: from, "content-type": "application/json", "x-csrf-token": await csrfTokenOf(origin, cookie) }, body: JSON.stringify(body) });
      const me = async (base = origin) => ((await (await fetch(`${base}/me`, { headers: { cookie } })).json()) as { data: { orgId: string; role: string } }).data;
      return { email, cookie, post, me };
    };
    const owner = await signUp("owner");
    const teammate = await signUp("teammate");
    const ownerOrg = (await owner.me()).orgId;

    const crossSite = await owner.post(origin, "/auth/organization/invite-member", { email: teammate.email, role: "member" }, "https://evil.example");
    expect(crossSite.status).toBe(403);
    const invite = await owner.post(origin, "/auth/organization/invite-member", { email: teammate.email, role: "member" });
    expect(invite.status).toBe(200);
    const { id: invitationId } = (await invite.json()) as { id: string };
    expect((await teammate.post(secondGateway, "/auth/organization/accept-invitation", { invitationId })).status).toBe(200);

    // Both replicas see the teammate in the owner's org as a member, who may read but not create keys.
    for (const base of [origin, secondGateway]) expect(await teammate.me(base)).toMatchObject({ orgId: ownerOrg, role: "member" });
    expect((await fetch(`${origin}/api-keys`, { headers: { cookie: teammate.cookie } })).status).toBe(200);
    const refused = await teammate.post(origin, "/api-keys", { name: "not allowed" });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as { error: { code: string } }).error.code).toBe("FORBIDDEN");
    // Webhook test events and retries are managing webhooks too.
    const testEvent = await teammate.post(origin, "/webhooks/test", {});
    expect(testEvent.status).toBe(403);
    expect(((await testEvent.json()) as { error: { code: string } }).error.code).toBe("FORBIDDEN");

    expect((await owner.post(origin, "/auth/organization/remove-member", { memberIdOrEmail: teammate.email })).status).toBe(200);
    // The very next request, through either replica, acts in the teammate's own org again.
    for (const base of [origin, secondGateway]) expect((await teammate.me(base)).orgId).not.toBe(ownerOrg);
  });

  it("refuses bodies over 1 MB with 413 PAYLOAD_TOO_LARGE and unknown routes with 404 NOT_FOUND", async () => {
    const { key } = await createOrg(system.env, "pro", "Sizes");
    const big = await api(system.gatewayUrl, key)("POST", "/api-keys", { name: "x".repeat(1024 * 1024 + 10) });
    expect(big.status).toBe(413);
    expect(big.body.error.code).toBe("PAYLOAD_TOO_LARGE");
    const missing = await api(system.gatewayUrl, key)("GET", "/nope");
    expect(missing.status).toBe(404);
    expect(missing.body.error.code).toBe("NOT_FOUND");
  });
});
