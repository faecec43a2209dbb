import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAuthHarness, type AuthHarness } from "../testing/auth-harness.js";
import { BETTER_AUTH_RATE_LIMITS } from "./better-auth.js";

describe("Better Auth's own limiter (SECURITY-AUDIT finding 3, the backstop behind the gateway's limits)", () => {
  let harness: AuthHarness;
  beforeAll(async () => {
    // Under vitest NODE_ENV is "test": Better Auth's default would leave its limiter off here, as it did everywhere
    // NODE_ENV was not "production" (no deployment sets it).
    harness = await startAuthHarness("ratelimit");
  });
  afterAll(() => harness?.stop());

  const register = (clientIp: string) =>
    fetch(`http://127.0.0.1:${harness.service.httpPort}/auth/oauth2/register`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-forwarded-for": clientIp },
      body: JSON.stringify({ client_name: "agent", redirect_uris: ["http://localhost:7777/cb"], token_endpoint_auth_method: "none", grant_types: ["authorization_code"], response_types: ["code"] }),
    });

  it("refuses client registrations past the limit, counting each client IP the gateway states on its own", async () => {
    const { max } = BETTER_AUTH_RATE_LIMITS["/oauth2/register"];
    for (let attempt = 0; attempt < max; attempt++) expect((await register("203.0.113.7")).status).toBe(201);
    const refused = await register("203.0.113.7");
    expect(refused.status).toBe(429);
    expect(Number(refused.headers.get("x-retry-after"))).toBeGreaterThan(0);
    expect((await register("203.0.113.8")).status).toBe(201);
  });

  it("does not believe a list of addresses (only the gateway's single, overwritten value counts)", async () => {
    // A spoofed chain would otherwise give every request a fresh bucket; Better Auth falls back to one shared one.
    const statuses: number[] = [];
    for (let attempt = 0; attempt <= BETTER_AUTH_RATE_LIMITS["/oauth2/register"].max; attempt++) {
      statuses.push((await register(`198.51.100.${attempt}, 10.0.0.1`)).status);
    }
    expect(statuses).toContain(429);
  });
});
