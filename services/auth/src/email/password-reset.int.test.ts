import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { eventually, outcomeOf, startMailbox, type Mailbox } from "@renderbus/testing";
import { startAuthHarness, type AuthHarness } from "../testing/auth-harness.js";

const ORIGIN = "http://127.0.0.1:3000";
const password = "correct horse battery";

describe("forgotten passwords: a reset link by email", () => {
  let mailbox: Mailbox;
  let harness: AuthHarness;
  beforeAll(async () => {
    mailbox = await startMailbox();
    // Resets need only a mail server: they work whether or not sign-ups confirm their address.
    harness = await startAuthHarness("passwordreset", { EMAIL_VERIFICATION: "off", SMTP_URL: mailbox.url });
  });
  afterAll(async () => {
    await harness?.stop();
    await mailbox?.close();
  });

  const base = () => `http://127.0.0.1:${harness.service.httpPort}/auth`;
  const post = (path: string, body: unknown, cookie?: string) =>
    fetch(`${base()}${path}`, { method: "POST", headers: { "content-type": "application/json", origin: ORIGIN, ...(cookie ? { cookie } : {}) }, body: JSON.stringify(body) });
  const cookieOf = (response: Response) => response.headers.getSetCookie().find((value) => value.startsWith("rb_session="))!.split(";")[0]!;
  /** Follows a link against this auth service (links name the public URL, the gateway's). */
  const follow = (link: string) => fetch(link.replace(ORIGIN, `http://127.0.0.1:${harness.service.httpPort}`), { redirect: "manual" });

  it("emails a one-time link that lets the owner choose a new password and signs the account out everywhere", async () => {
    const email = `reset-${randomBytes(4).toString("hex")}@example.com`;
    const signUp = await post("/sign-up/email", { email, password, name: "Ada" });
    expect(signUp.status).toBe(200);
    const sessions = [cookieOf(signUp), cookieOf(await post("/sign-in/email", { email, password }))];

    const asked = await post("/request-password-reset", { email, redirectTo: "/app/reset-password" });
    expect(asked.status).toBe(200);
    // An address without an account gets the same answer, so the form cannot tell who has one.
    const unknown = await post("/request-password-reset", { email: `nobody-${randomBytes(4).toString("hex")}@example.com`, redirectTo: "/app/reset-password" });
    expect(unknown.status).toBe(200);
    expect(await unknown.json()).toEqual(await asked.json());

    // The email leaves in the background.
    await eventually(async () => mailbox.emailsTo(email).length, (count) => count > 0);
    const link = mailbox.linkFor(email, "/auth/reset-password/");
    expect(link).toMatch(new RegExp(`^${ORIGIN}/auth/reset-password/[A-Za-z0-9]+\\?callbackURL=%2Fapp%2Freset-password$`));
    const mail = mailbox.emailsTo(email).at(-1)!;
    expect(mail.raw).toMatch(/^Subject: Reset your Renderbus password/m);
    expect(harness.logs.join("")).not.toContain("/auth/reset-password/");

    const landed = await follow(link);
    expect(landed.status).toBe(302);
    const location = new URL(landed.headers.get("location")!, ORIGIN);
    expect(location.pathname).toBe("/app/reset-password");
    const token = location.searchParams.get("token")!;
    expect(token).toBeTruthy();

    const reset = await post("/reset-password", { newPassword: "a brand new passphrase", token });
    expect(reset.status).toBe(200);
    for (const cookie of sessions) expect(await outcomeOf(harness.authClient.resolveSession({ cookie }))).toBe("UNAUTHORIZED");
    expect((await post("/sign-in/email", { email, password })).status).toBe(401);
    expect((await post("/sign-in/email", { email, password: "a brand new passphrase" })).status).toBe(200);

    // Once only.
    expect((await post("/reset-password", { newPassword: "yet another passphrase", token })).status).toBe(400);
    expect((await follow(link)).headers.get("location")).toContain("error=INVALID_TOKEN");
  });

  it("is unavailable without a mail server (no link could reach the owner)", async () => {
    const withoutMail = await startAuthHarness("passwordresetoff", { EMAIL_VERIFICATION: "off" });
    try {
      const response = await fetch(`http://127.0.0.1:${withoutMail.service.httpPort}/auth/request-password-reset`, {
        method: "POST",
        headers: { "content-type": "application/json", origin: ORIGIN },
        body: JSON.stringify({ email: "someone@example.com" }),
      });
      expect(response.status).toBe(400);
      expect(((await response.json()) as { code: string }).code).toBe("RESET_PASSWORD_DISABLED");
    } finally {
      await withoutMail.stop();
    }
  });
});
