import { randomBytes } from "node:crypto";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startAuthHarness, type AuthHarness } from "../testing/auth-harness.js";

const ORIGIN = "http://127.0.0.1:3000";

function sessionCookieOf(response: Response): string {
  const cookie = response.headers.getSetCookie().find((value) => value.startsWith("rb_session="));
  if (!cookie) throw new Error(`no rb_session cookie in ${JSON.stringify(response.headers.getSetCookie())}`);
  return cookie;
}

const cookieHeader = (setCookie: string) => setCookie.split(";")[0]!;

async function post(harness: AuthHarness, path: string, body: unknown, headers: Record<string, string> = {}): Promise<Response> {
  return fetch(`http://127.0.0.1:${harness.service.httpPort}/auth${path}`, {
    method: "POST",
    headers: { "content-type": "application/json", origin: ORIGIN, ...headers },
    body: JSON.stringify(body),
  });
}

describe("dashboard sessions (Better Auth)", () => {
  let harness: AuthHarness;
  beforeAll(async () => {
    harness = await startAuthHarness("sessions");
  });
  afterAll(() => harness?.stop());

  const newUser = () => ({ email: `u${randomBytes(4).toString("hex")}@example.com`, password: "correct horse battery", name: "Ada" });

  it("signs up into a personal free org with its monthly credits and an rb_session cookie of 30 days", async () => {
    const user = newUser();
    const response = await post(harness, "/sign-up/email", user);
    expect(response.status).toBe(200);
    const cookie = sessionCookieOf(response);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
    expect(cookie).not.toMatch(/Secure/i);
    expect(cookie).toMatch(/Max-Age=2592000/);

    const context = await harness.authClient.resolveSession({ cookie: cookieHeader(cookie) });
    expect(context).toMatchObject({ plan: "free", credential: "session", role: "owner" });
    expect(context.userId).toMatch(/^usr_/);
    expect(context.orgId).toMatch(/^org_/);
    const org = await harness.authClient.getOrg({}, { auth: context });
    expect(org.credits).toBe(200);
    const usage = await harness.billingClient.listUsage({ limit: 10 }, { auth: context });
    expect(usage.entries).toMatchObject([{ kind: "grant", credits: 200 }]);
  });

  it("signs in, and sign-out invalidates the session server-side", async () => {
    const user = newUser();
    await post(harness, "/sign-up/email", user);
    const wrong = await post(harness, "/sign-in/email", { email: user.email, password: "wrong password!" });
    expect(wrong.status).toBe(401);
    const signIn = await post(harness, "/sign-in/email", { email: user.email, password: user.password });
    expect(signIn.status).toBe(200);
    const cookie = cookieHeader(sessionCookieOf(signIn));
    expect((await harness.authClient.resolveSession({ cookie })).credential).toBe("session");

    const signOut = await post(harness, "/sign-out", {}, { cookie });
    expect(signOut.status).toBe(200);
    await expect(harness.authClient.resolveSession({ cookie })).rejects.toMatchObject({ code: "UNAUTHORIZED" });
  });

  it("refuses a cross-site POST carrying the cookie", async () => {
    const user = newUser();
    const cookie = cookieHeader(sessionCookieOf(await post(harness, "/sign-up/email", user)));
    const crossSite = await post(harness, "/sign-out", {}, { cookie, origin: "https://evil.example" });
    expect(crossSite.status).toBe(403);
    expect((await harness.authClient.resolveSession({ cookie })).credential).toBe("session");
  });

  it("answers UNAUTHORIZED for expired, forged and missing sessions", async () => {
    const user = newUser();
    const cookie = cookieHeader(sessionCookieOf(await post(harness, "/sign-up/email", user)));
    const context = await harness.authClient.resolveSession({ cookie });
    await sql`update session set "expiresAt" = now() - interval '1 minute' where "userId" = ${context.userId}`.execute(harness.store.db);
    await expect(harness.authClient.resolveSession({ cookie })).rejects.toMatchObject({ code: "UNAUTHORIZED" });
    for (const forged of ["", "rb_session=", "rb_session=abc.def", `rb_session=${randomBytes(40).toString("base64url")}`, "other=1", "rb_session=%ZZ;;;="]) {
      await expect(harness.authClient.resolveSession({ cookie: forged })).rejects.toMatchObject({ code: "UNAUTHORIZED" });
    }
  });
});

describe("dashboard sessions behind an HTTPS public URL", () => {
  let harness: AuthHarness;
  beforeAll(async () => {
    harness = await startAuthHarness("sessionshttps", { PUBLIC_URL: "https://renderbus.example" });
  });
  afterAll(() => harness?.stop());

  it("marks rb_session Secure and keeps its exact name", async () => {
    const response = await post(harness, "/sign-up/email", { email: "secure@example.com", password: "correct horse battery", name: "S" }, { origin: "https://renderbus.example" });
    expect(response.status).toBe(200);
    const cookie = sessionCookieOf(response);
    expect(cookie).toMatch(/; Secure/i);
    expect(cookie).toMatch(/HttpOnly/i);
    expect(cookie).toMatch(/SameSite=Lax/i);
  });
});
