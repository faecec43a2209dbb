import { randomBytes } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { AuthContext } from "@renderbus/rpc";
import { eventually, startMailbox, type Mailbox } from "@renderbus/testing";
import { startAuthHarness, type AuthHarness } from "../testing/auth-harness.js";
import { releaseConfirmedHolds } from "../billing/held-credits.js";
import { renewDueCredits } from "../billing/monthly-credits.js";
import { setOrgPlan } from "../orgs/set-org-plan.js";
import { HELD_CREDITS_MESSAGE } from "../rpc/billing.rpc.js";
import { OAUTH_SIGN_IN_PATH } from "../oauth/oauth-provider.js";

const ORIGIN = "http://127.0.0.1:3000";

describe("email verification: a sign-up's free credits wait for its address (SECURITY-AUDIT finding 3)", () => {
  let mailbox: Mailbox;
  let harness: AuthHarness;
  beforeAll(async () => {
    mailbox = await startMailbox();
    harness = await startAuthHarness("emailverify", { EMAIL_VERIFICATION: "required", SMTP_URL: mailbox.url, EMAIL_FROM: "Renderbus <hello@renderbus.test>" });
  });
  afterAll(async () => {
    await harness?.stop();
    await mailbox?.close();
  });

  const base = () => `http://127.0.0.1:${harness.service.httpPort}/auth`;

  async function signUp(body: Record<string, unknown> = {}) {
    const email = `u${randomBytes(4).toString("hex")}@example.com`;
    const response = await fetch(`${base()}/sign-up/email`, {
      method: "POST",
      headers: { "content-type": "application/json", origin: ORIGIN },
      body: JSON.stringify({ email, password: "correct horse battery", name: "Ada", ...body }),
    });
    expect(response.status).toBe(200);
    const cookie = response.headers.getSetCookie().find((value) => value.startsWith("rb_session="))!.split(";")[0]!;
    const context = async (): Promise<AuthContext> => {
      const resolved = await harness.authClient.resolveSession({ cookie });
      return { userId: resolved.userId, orgId: resolved.orgId, plan: resolved.plan, role: resolved.role, credential: resolved.credential };
    };
    const call = (method: string, path: string, json?: unknown) =>
      fetch(`${base()}${path}`, { method, headers: { cookie, origin: ORIGIN, ...(json ? { "content-type": "application/json" } : {}) }, ...(json ? { body: JSON.stringify(json) } : {}) });
    return { email, cookie, context, call };
  }

  const balanceOf = (context: AuthContext) => harness.billingClient.getBalance({}, { auth: context });

  /** Follows a confirmation link against this auth service (the link names the public URL, the gateway's). */
  const follow = (link: string) => fetch(link.replace(ORIGIN, `http://127.0.0.1:${harness.service.httpPort}`), { redirect: "manual" });

  it("emails a confirmation link at sign-up and holds the personal org's credits until it is followed", async () => {
    const user = await signUp({ callbackURL: "/app" });
    const link = mailbox.linkFor(user.email);
    expect(link.startsWith(`${ORIGIN}/auth/verify-email?token=`)).toBe(true);
    const mail = mailbox.received.find((message) => message.to.includes(user.email))!;
    expect(mail.raw).toMatch(/^From: Renderbus <hello@renderbus\.test>/m);
    expect(mail.raw).toMatch(/^Subject: Confirm your email address for Renderbus/m);

    const context = await user.context();
    expect(await balanceOf(context)).toMatchObject({ credits: 0, reserved: 0, awaitingEmailVerification: true });
    // A submission's credit check says why, and what to do.
    await expect(harness.billingClient.checkBalance({ orgId: context.orgId, credits: 1 })).rejects.toMatchObject({ code: "INSUFFICIENT_CREDITS", message: HELD_CREDITS_MESSAGE });
    expect((await harness.billingClient.listUsage({ limit: 10 }, { auth: context })).entries).toEqual([]);

    // A token that was not issued confirms nothing.
    const forged = await follow(`${ORIGIN}/auth/verify-email?token=${randomBytes(32).toString("base64url")}`);
    expect(forged.status).toBeGreaterThanOrEqual(400);
    expect(await balanceOf(context)).toMatchObject({ credits: 0, awaitingEmailVerification: true });

    const confirmed = await follow(link);
    expect(confirmed.status).toBe(302);
    expect(confirmed.headers.get("location")).toBe("/app");
    expect(await balanceOf(context)).toMatchObject({ credits: 200, awaitingEmailVerification: false });
    expect((await harness.billingClient.listUsage({ limit: 10 }, { auth: context })).entries).toMatchObject([{ kind: "grant", credits: 200 }]);

    // Following it again grants nothing more.
    await follow(link);
    expect(await balanceOf(context)).toMatchObject({ credits: 200 });
  });

  it("holds every org an unconfirmed user creates, and releases them all on confirmation; a confirmed user's new org has its credits at once", async () => {
    const user = await signUp();
    const side = await user.call("POST", "/organization/create", { name: "Side project", slug: `side-${randomBytes(4).toString("hex")}` });
    expect(side.status).toBe(200);
    const sideContext = await user.context();
    expect(sideContext.orgId).toBe(((await side.json()) as { id: string }).id);
    expect(await balanceOf(sideContext)).toMatchObject({ credits: 0, awaitingEmailVerification: true });

    await follow(mailbox.linkFor(user.email));
    expect(await balanceOf(sideContext)).toMatchObject({ credits: 200, awaitingEmailVerification: false });

    const later = await user.call("POST", "/organization/create", { name: "Later", slug: `later-${randomBytes(4).toString("hex")}` });
    expect(later.status).toBe(200);
    expect(await balanceOf(await user.context())).toMatchObject({ credits: 200, awaitingEmailVerification: false });
  });

  it("sends another link when asked; a mail server that refuses fails the request (503), not the sign-up", async () => {
    mailbox.refuse(true);
    const user = await signUp();
    expect(await balanceOf(await user.context())).toMatchObject({ credits: 0, awaitingEmailVerification: true });
    const refused = await user.call("POST", "/send-verification-email", { email: user.email, callbackURL: "/app" });
    expect(refused.status).toBe(503);
    expect(((await refused.json()) as { message: string }).message).toBe("The confirmation email could not be sent; retry later");
    expect(harness.logs.join("")).not.toContain("verify-email?token=");

    mailbox.refuse(false);
    const resent = await user.call("POST", "/send-verification-email", { email: user.email, callbackURL: "/app" });
    expect(resent.status).toBe(200);
    await follow(mailbox.linkFor(user.email));
    expect(await balanceOf(await user.context())).toMatchObject({ credits: 200, awaitingEmailVerification: false });
  });

  it("skips held orgs in monthly renewals; the renewal loop releases a hold whose user is confirmed (a crash between the two writes)", async () => {
    const user = await signUp();
    const context = await user.context();
    await renewDueCredits(harness.store.db, harness.store.plans, Date.now() + 40 * 24 * 60 * 60 * 1000);
    expect(await balanceOf(context)).toMatchObject({ credits: 0, awaitingEmailVerification: true });

    await harness.store.db.updateTable("user").set({ emailVerified: true }).where("id", "=", context.userId).execute();
    expect(await releaseConfirmedHolds(harness.store.db, harness.store.plans)).toBe(1);
    expect(await balanceOf(context)).toMatchObject({ credits: 200, awaitingEmailVerification: false });
    expect(await releaseConfirmedHolds(harness.store.db, harness.store.plans)).toBe(0);
  });

  it("emails invitations from confirmed inviters only, and lets only a confirmed address accept one (an address signed up with but not owned cannot take it)", async () => {
    const unconfirmed = await signUp();
    const stranger = `stranger-${randomBytes(4).toString("hex")}@example.com`;
    const unsent = await unconfirmed.call("POST", "/organization/invite-member", { email: stranger, role: "member" });
    expect(unsent.status).toBe(200); // the dashboard shows the link to share

    const owner = await signUp();
    await follow(mailbox.linkFor(owner.email));
    const invitee = await signUp();
    const invited = await owner.call("POST", "/organization/invite-member", { email: invitee.email, role: "member" });
    expect(invited.status).toBe(200);
    const { id: invitationId } = (await invited.json()) as { id: string };
    await eventually(async () => mailbox.emailsTo(invitee.email).length, (count) => count === 2);
    expect(mailbox.linkFor(invitee.email, "/app/invitations/")).toBe(`${ORIGIN}/app/invitations/${invitationId}`);
    const invitation = mailbox.emailsTo(invitee.email).at(-1)!.raw;
    expect(invitation).toMatch(/^Subject: Join Ada's organization on Renderbus/m);
    expect(invitation).toContain(`Ada (${owner.email}) invited you`);
    expect(mailbox.emailsTo(stranger)).toEqual([]);

    expect((await invitee.call("POST", "/organization/accept-invitation", { invitationId })).status).toBe(403);
    await follow(mailbox.linkFor(invitee.email));
    expect((await invitee.call("POST", "/organization/accept-invitation", { invitationId })).status).toBe(200);
  });

  it("sends the link of a sign-up on the OAuth sign-in page to the dashboard", async () => {
    const email = `agent-${randomBytes(4).toString("hex")}@example.com`;
    const form = new URLSearchParams({ mode: "sign-up", email, password: "correct horse battery", oauth_query: "" });
    await fetch(`http://127.0.0.1:${harness.service.httpPort}${OAUTH_SIGN_IN_PATH}`, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded", origin: ORIGIN },
      body: form.toString(),
      redirect: "manual",
    });
    expect(new URL(mailbox.linkFor(email)).searchParams.get("callbackURL")).toBe("/app/billing");
  });

  it("releases a held org whose plan an operator changes", async () => {
    const user = await signUp();
    const context = await user.context();
    await setOrgPlan(harness.store, context.orgId, "starter");
    expect(await balanceOf({ ...context, plan: "starter" })).toMatchObject({ credits: harness.store.plans.starter.monthlyCredits, awaitingEmailVerification: false });
  });
});
