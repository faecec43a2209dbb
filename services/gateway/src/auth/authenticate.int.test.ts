import { afterEach, describe, expect, it } from "vitest";
import type { auth } from "@renderbus/contracts";
import { AppError, UNAUTHORIZED_MESSAGE, unauthorized } from "@renderbus/errors";
import { authContextOf, bodyOf, gatewayWithFakes, newApiKey, type GatewayWithFakes } from "../http/gateway-with-fakes.test-support.js";
import { CSRF_COOKIE, CSRF_HEADER } from "./csrf-token.js";

/**
 * Authentication and rate limits of the gateway, in process (`app.inject`) over fake auth, jobs and billing services
 * and the test Redis: what a request must carry to be let in, what every refusal looks like, and how budgets are
 * spent and reported.
 */

let gateway: GatewayWithFakes | undefined;
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
});

const REFUSAL = { error: { code: "UNAUTHORIZED", message: UNAUTHORIZED_MESSAGE } };

/** A fake auth service that knows `keys` (key to context) and counts its lookups. */
function authServiceKnowing(keys: Map<string, auth.AuthContext>) {
  const calls = { resolveApiKey: 0, resolveSession: 0 };
  return {
    calls,
    resolveApiKey: async ({ key }: { key: string }) => {
      calls.resolveApiKey++;
      const context = keys.get(key);
      if (!context) throw unauthorized();
      return context;
    },
  };
}

describe("API key authentication", () => {
  it("answers a request without a credential with 401, a Bearer challenge and the fixed body, asking no service", async () => {
    const service = authServiceKnowing(new Map());
    gateway = await gatewayWithFakes({ auth: service });
    const response = await gateway.app.inject({ method: "GET", url: "/me" });
    expect(response.statusCode).toBe(401);
    expect(response.headers["www-authenticate"]).toBe('Bearer realm="renderbus"');
    expect(bodyOf(response)).toEqual(REFUSAL);
    expect(service.calls.resolveApiKey).toBe(0);
  });

  it("refuses a malformed key or header without a lookup, and an unknown key after one, all with the same body", async () => {
    const service = authServiceKnowing(new Map());
    gateway = await gatewayWithFakes({ auth: service });
    for (const authorization of ["Bearer not-a-key", "Basic dXNlcjpwYXNz", "Bearer", `Bearer ${newApiKey()}x y`]) {
      const response = await gateway.app.inject({ method: "GET", url: "/me", headers: { authorization } });
      expect({ authorization, status: response.statusCode, body: bodyOf(response) }).toEqual({ authorization, status: 401, body: REFUSAL });
    }
    expect(service.calls.resolveApiKey).toBe(0);

    const unknown = await gateway.app.inject({ method: "GET", url: "/me", headers: { authorization: `Bearer ${newApiKey()}` } });
    expect(unknown.statusCode).toBe(401);
    expect(bodyOf(unknown)).toEqual(REFUSAL);
    expect(service.calls.resolveApiKey).toBe(1);
  });

  it("lets a known key in as its org, and serves the next request from the cache", async () => {
    const key = newApiKey();
    const context = authContextOf({ plan: "pro", role: "admin" });
    const service = authServiceKnowing(new Map([[key, context]]));
    // A long cache life, so a slow machine cannot turn the second request into a second lookup.
    gateway = await gatewayWithFakes({ auth: service }, { AUTH_CACHE_TTL_MS: "600000" });
    for (let request = 0; request < 2; request++) {
      const response = await gateway.app.inject({ method: "GET", url: "/me", headers: { authorization: `Bearer ${key}` } });
      expect(response.statusCode).toBe(200);
      expect(bodyOf(response)).toEqual({ data: { userId: context.userId, orgId: context.orgId, plan: "pro", role: "admin", credential: "api_key" } });
    }
    expect(service.calls.resolveApiKey).toBe(1);
  });

  it("refuses a cached key within AUTH_MARKS_RECHECK_MS when another replica revoked it (the revocation mark in Redis)", async () => {
    const key = newApiKey();
    const context = authContextOf();
    const keys = new Map([[key, context]]);
    const service = authServiceKnowing(keys);
    gateway = await gatewayWithFakes({ auth: service }, { AUTH_CACHE_TTL_MS: "600000", AUTH_MARKS_RECHECK_MS: "100" });
    const headers = { authorization: `Bearer ${key}` };
    expect((await gateway.app.inject({ method: "GET", url: "/me", headers })).statusCode).toBe(200);

    // The auth service forgets the key, and a replica that handled the revocation marks it; this replica's cache
    // still holds the key and never heard of the revocation on NATS.
    keys.delete(key);
    await gateway.otherReplica().revokeApiKey({ apiKeyId: context.apiKeyId });
    await new Promise((resolve) => setTimeout(resolve, 150));
    const response = await gateway.app.inject({ method: "GET", url: "/me", headers });
    expect(response.statusCode).toBe(401);
    expect(bodyOf(response)).toEqual(REFUSAL);
    expect(service.calls.resolveApiKey).toBe(1); // refused by the mark, not by asking the auth service again
  });

  it("answers 503 SERVICE_UNAVAILABLE, not 401 or 500, while the auth service is unreachable", async () => {
    gateway = await gatewayWithFakes({ auth: { resolveApiKey: async () => Promise.reject(new AppError("SERVICE_UNAVAILABLE", "A dependency is unavailable; retry later")) } });
    const response = await gateway.app.inject({ method: "GET", url: "/me", headers: { authorization: `Bearer ${newApiKey()}` } });
    expect(response.statusCode).toBe(503);
    expect(bodyOf(response)).toMatchObject({ error: { code: "SERVICE_UNAVAILABLE" } });
  });
});

describe("dashboard session cookie and CSRF", () => {
  const SESSION = "rb_session=good-session-token";
  const sessionContext = authContextOf({ credential: "session", role: "owner", apiKeyId: "" });

  async function dashboardGateway() {
    const created: string[] = [];
    gateway = await gatewayWithFakes({
      auth: {
        resolveSession: async ({ cookie }) => {
          if (!/(?:^|;\s*)rb_session=good-session-token(?:;|$)/.test(cookie)) throw unauthorized();
          return sessionContext;
        },
        createApiKey: async ({ name }) => {
          created.push(name);
          return { apiKey: { id: "key_new", name, start: "rb_abc", createdAt: 1 }, key: "rb_full-key-shown-once" } as auth.CreateApiKeyResponse;
        },
      },
    });
    return { app: gateway.app, created, publicOrigin: new URL(gateway.deps.config.PUBLIC_URL).origin };
  }

  it("lets a session in, and hands the dashboard its CSRF token in the rb_csrf cookie", async () => {
    const { app } = await dashboardGateway();
    const response = await app.inject({ method: "GET", url: "/me", headers: { cookie: SESSION } });
    expect(response.statusCode).toBe(200);
    expect(bodyOf(response)).toMatchObject({ data: { orgId: sessionContext.orgId, credential: "session" } });
    expect(String(response.headers["set-cookie"])).toMatch(new RegExp(`^${CSRF_COOKIE}=[A-Za-z0-9_-]{43}; Path=/; Max-Age=\\d+; SameSite=Strict$`));
  });

  it("refuses an unknown or signed-out session with the fixed 401", async () => {
    const { app } = await dashboardGateway();
    const response = await app.inject({ method: "GET", url: "/me", headers: { cookie: "rb_session=signed-out" } });
    expect(response.statusCode).toBe(401);
    expect(bodyOf(response)).toEqual(REFUSAL);
  });

  it("refuses a cookie-authenticated write from another origin, or without the session's token, and changes nothing", async () => {
    const { app, created, publicOrigin } = await dashboardGateway();
    const token = csrfTokenFrom(await app.inject({ method: "GET", url: "/me", headers: { cookie: SESSION } }));
    const write = (headers: Record<string, string>) => app.inject({ method: "POST", url: "/api-keys", headers: { cookie: SESSION, "content-type": "application/json", ...headers }, payload: { name: "ci" } });

    const refusals = [
      await write({}),
      await write({ origin: "https://evil.example", [CSRF_HEADER]: token }),
      await write({ origin: publicOrigin }),
      await write({ origin: publicOrigin, [CSRF_HEADER]: `${token.slice(0, -1)}${token.endsWith("A") ? "B" : "A"}` }),
    ];
    expect(refusals.map((response) => [response.statusCode, (bodyOf(response) as { error: { code: string; message: string } }).error])).toEqual([
      [403, { code: "FORBIDDEN", message: "Cross-site request refused" }],
      [403, { code: "FORBIDDEN", message: "Cross-site request refused" }],
      [403, { code: "FORBIDDEN", message: "Missing or invalid CSRF token (X-CSRF-Token)" }],
      [403, { code: "FORBIDDEN", message: "Missing or invalid CSRF token (X-CSRF-Token)" }],
    ]);
    expect(created).toEqual([]);

    const accepted = await write({ origin: publicOrigin, [CSRF_HEADER]: token });
    expect(accepted.statusCode).toBe(201);
    expect(bodyOf(accepted)).toMatchObject({ data: { id: "key_new", name: "ci", key: "rb_full-key-shown-once" } });
    expect(created).toEqual(["ci"]);
  });
});

function csrfTokenFrom(response: { headers: Record<string, unknown> }): string {
  const match = /rb_csrf=([^;]+)/.exec(String(response.headers["set-cookie"]));
  if (!match?.[1]) throw new Error("no rb_csrf cookie in the response");
  return match[1];
}

describe("rate limits", () => {
  it("lets an org's API keys make its plan's requests per minute, then answers 429 with Retry-After, counting down in RateLimit-*", async () => {
    const key = newApiKey();
    const context = authContextOf({ plan: "free" });
    gateway = await gatewayWithFakes({ auth: authServiceKnowing(new Map([[key, context]])) });
    const limit = gateway.deps.plans.free.requestsPerMinute;
    const headers = { authorization: `Bearer ${key}` };

    for (let request = 1; request <= limit; request++) {
      const response = await gateway.app.inject({ method: "GET", url: "/me", headers });
      expect(response.statusCode).toBe(200);
      expect([response.headers["ratelimit-limit"], response.headers["ratelimit-remaining"]]).toEqual([String(limit), String(limit - request)]);
    }
    const refused = await gateway.app.inject({ method: "GET", url: "/me", headers });
    expect(refused.statusCode).toBe(429);
    expect(bodyOf(refused)).toEqual({ error: { code: "RATE_LIMITED", message: `Rate limit of ${limit} requests per minute exceeded` } });
    const retryAfter = Number(refused.headers["retry-after"]);
    expect(retryAfter).toBeGreaterThanOrEqual(1);
    expect(retryAfter).toBeLessThanOrEqual(60);
    expect(refused.headers["ratelimit-remaining"]).toBe("0");
    expect(refused.headers["ratelimit-reset"]).toBe(String(retryAfter));
  });

  it("counts requests per client address before the credential is looked up, so failed attempts cost no lookup past the budget", async () => {
    const service = authServiceKnowing(new Map());
    gateway = await gatewayWithFakes({ auth: service }, { IP_REQUESTS_PER_MINUTE: "3" });
    const statuses = [];
    for (let request = 0; request < 5; request++) {
      statuses.push((await gateway.app.inject({ method: "GET", url: "/me", headers: { authorization: `Bearer ${newApiKey()}` } })).statusCode);
    }
    expect(statuses).toEqual([401, 401, 401, 429, 429]);
    expect(service.calls.resolveApiKey).toBe(3);
  });

  it("gives each dashboard user their own budget, separate from the org's API limit", async () => {
    const key = newApiKey();
    const orgId = "org_shared";
    gateway = await gatewayWithFakes(
      {
        auth: {
          ...authServiceKnowing(new Map([[key, authContextOf({ orgId, plan: "free" })]])),
          resolveSession: async () => authContextOf({ orgId, credential: "session", apiKeyId: "" }),
        },
      },
      { SESSION_REQUESTS_PER_MINUTE: "2" },
    );
    const session = { cookie: "rb_session=anything" };
    const sessionStatuses = [];
    for (let request = 0; request < 3; request++) sessionStatuses.push((await gateway.app.inject({ method: "GET", url: "/me", headers: session })).statusCode);
    expect(sessionStatuses).toEqual([200, 200, 429]);

    const apiKeyRequest = await gateway.app.inject({ method: "GET", url: "/me", headers: { authorization: `Bearer ${key}` } });
    expect(apiKeyRequest.statusCode).toBe(200);
    expect(apiKeyRequest.headers["ratelimit-limit"]).toBe(String(gateway.deps.plans.free.requestsPerMinute));
  });
});
