import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import type { Mailbox, RunningSystem } from "@renderbus/testing";
import { csrfTokenOf, waitFor } from "../helpers.js";
import { screenshot, seriousAccessibilityViolations } from "./browser.js";
import { startDashboardRig, type DashboardRig } from "./dashboard-rig.js";

const LONG = 120_000;

/** Where the dashboard's confirmation links land (apps/dashboard/src/session.tsx). */
const CALLBACK = "/app/billing";

describe("confirming an email address from the dashboard, in a real browser with a real mail server", () => {
  let rig: DashboardRig;
  let mailbox: Mailbox;
  let system: RunningSystem;
  let browser: Browser;

  beforeAll(async () => {
    // Given an SMTP server, the system keeps EMAIL_VERIFICATION=required: sign-ups are emailed a link.
    rig = await startDashboardRig("dashemail", { mail: true });
    ({ system, browser } = rig);
    mailbox = rig.mailbox!;
  }, 240_000);

  afterAll(() => rig?.stop());

  /** Opens `url` and returns once the page and the banner have each read the balance (so the banner has decided). */
  async function openAndReadBalance(page: Page, url: string) {
    let reads = 0;
    const count = (response: { url(): string }) => {
      if (new URL(response.url()).pathname === "/billing/balance") reads += 1;
    };
    page.on("response", count);
    try {
      await page.goto(url);
      await waitFor(() => (reads >= 2 ? true : undefined), { what: "the Billing page and the banner to read the balance" });
    } finally {
      page.off("response", count);
    }
  }

  it(
    "shows the address to confirm, sends the link again, says a forged link is not valid, and gives the free credits once the newest link is followed",
    async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, baseURL: system.gatewayUrl });
      context.setDefaultTimeout(60_000);
      const page = await context.newPage();
      const problems: string[] = [];
      page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
      page.on("console", (message) => {
        if (/Content Security Policy|Refused to/i.test(message.text())) problems.push(`csp: ${message.text()}`);
      });

      const email = `erin-${Date.now()}@example.com`;
      await page.goto("/app/sign-up");
      await page.getByLabel("Name").fill("Erin Email");
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill("correct horse battery");
      await page.getByRole("button", { name: "Create account" }).click();
      await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();

      // The banner, on the first page after sign-up: which address, and what waits for it.
      const banner = page.getByRole("region", { name: "Confirm your email address" });
      await banner.waitFor();
      const bannerText = await banner.innerText();
      expect(bannerText).toContain(`We sent a confirmation link to ${email}.`);
      expect(bannerText).toContain("Your organization's free credits arrive once you follow it.");
      expect(await seriousAccessibilityViolations(page)).toEqual([]);
      await screenshot(page, "email-confirmation-banner");

      // The sign-up's email names the dashboard page the link lands on.
      await waitFor(() => (mailbox.emailsTo(email).length === 1 ? true : undefined), { what: "the sign-up's email" });
      expect(mailbox.linkFor(email)).toContain(`callbackURL=${encodeURIComponent(CALLBACK)}`);

      // Billing: no credits yet, and why.
      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Billing" }).click();
      await page.getByRole("heading", { level: 1, name: "Billing" }).waitFor();
      const balanceCard = page.getByRole("region", { name: "Balance" });
      await balanceCard.getByText("0 credits ($0.00)", { exact: true }).waitFor();
      await balanceCard.getByText("This month's 200 credits arrive once you confirm your email address.").waitFor();
      await banner.waitFor();

      // A link Renderbus did not issue confirms nothing, and lands on the dashboard saying so: on the bare /app/ too (where
      // the OAuth sign-in page's sign-ups land), which moves on to Jobs with the message.
      await page.goto(`/auth/verify-email?token=bogus&callbackURL=${encodeURIComponent("/app/")}`);
      await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
      await banner.getByText("That confirmation link is not valid.").waitFor();
      await page.goto(`/auth/verify-email?token=bogus&callbackURL=${encodeURIComponent(CALLBACK)}`);
      expect(page.url()).toBe(`${system.gatewayUrl}${CALLBACK}?error=INVALID_TOKEN`);
      await banner.getByText("That confirmation link is not valid.").waitFor();
      await balanceCard.getByText("0 credits ($0.00)", { exact: true }).waitFor();
      await screenshot(page, "email-confirmation-invalid-link");

      // A mail server that refuses: the banner says that, not that Renderbus is down.
      mailbox.refuse(true);
      try {
        await banner.getByRole("button", { name: "Send the link again" }).click();
        await banner.getByRole("alert").getByText("The link could not be sent: The email could not be sent just now. Try again in a few minutes.").waitFor();
      } finally {
        mailbox.refuse(false);
      }

      // Another link, on request.
      await banner.getByRole("button", { name: "Send the link again" }).click();
      await banner.getByRole("status").getByText(`Sent: a new link is on its way to ${email}.`).waitFor();
      await screenshot(page, "email-confirmation-sent");
      expect(await banner.getByText("That confirmation link is not valid.").count()).toBe(0);
      expect(await banner.getByRole("alert").count()).toBe(0);
      await waitFor(() => (mailbox.emailsTo(email).length === 2 ? true : undefined), { what: "the second email" });
      const link = mailbox.linkFor(email);
      expect(link.startsWith(`${system.gatewayUrl}/auth/verify-email?token=`)).toBe(true);
      expect(link).toContain(`callbackURL=${encodeURIComponent(CALLBACK)}`);

      // Following the newest link: back on Billing, the credits are there and the banner is gone.
      await openAndReadBalance(page, link);
      expect(page.url()).toBe(`${system.gatewayUrl}${CALLBACK}`);
      await page.getByRole("heading", { level: 1, name: "Billing" }).waitFor();
      await balanceCard.getByText("200 credits ($2.00)", { exact: true }).waitFor();
      expect(await banner.count()).toBe(0);
      // Nothing on the page says credits are waiting any more (neither the banner, in any form, nor the Billing card).
      expect(await page.getByRole("main").innerText()).not.toMatch(/arrive once|confirm/i);
      await page.locator('td[data-label="Kind"]', { hasText: /^grant$/ }).waitFor();
      await screenshot(page, "email-confirmation-confirmed");

      expect(problems).toEqual([]);
      await context.close();
    },
    LONG,
  );

  it(
    "asks an invitee to confirm their address before the invitation opens, and brings the link back to it",
    async () => {
      // The owner, through the API: signs up, confirms (invitations are answered only from confirmed addresses, and
      // emailed only by confirmed inviters), invites an address nobody has signed up with yet.
      const origin = system.gatewayUrl;
      const ownerEmail = `olga-${Date.now()}@example.com`;
      const signUp = await fetch(`${origin}/auth/sign-up/email`, {
        method: "POST",
        headers: { "content-type": "application/json", origin },
        body: JSON.stringify({ email: ownerEmail, password: "correct horse battery", name: "Olga" }),
      });
      expect(signUp.status).toBe(200);
      const cookie = signUp.headers.getSetCookie().find((value) => value.startsWith("rb_session="))!.split(";")[0]!;
      await waitFor(() => (mailbox.emailsTo(ownerEmail).length === 1 ? true : undefined), { what: "the owner's confirmation email" });
      expect((await fetch(mailbox.linkFor(ownerEmail), { redirect: "manual" })).status).toBe(302);
      const inviteeEmail = `ivan-${Date.now()}@example.com`;
      const invite = await fetch(`${origin}/auth/organization/invite-member`, {
        method: "POST",
        headers: { cookie, origin, "content-type": "application/json", "x-csrf-token": await csrfTokenOf(origin, cookie) },
        body: JSON.stringify({ email: inviteeEmail, role: "member" }),
      });
      expect(invite.status).toBe(200);
      const { id: invitationId } = (await invite.json()) as { id: string };
      const invitationPath = `/app/invitations/${invitationId}`;
      await waitFor(() => (mailbox.emailsTo(inviteeEmail).length === 1 ? true : undefined), { what: "the invitation email" });
      expect(mailbox.linkFor(inviteeEmail, "/app/invitations/")).toBe(`${origin}${invitationPath}`);

      // The invitee follows the emailed link, creates an account with the invited address...
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, baseURL: origin });
      context.setDefaultTimeout(60_000);
      const page = await context.newPage();
      await page.goto(invitationPath);
      await page.getByRole("link", { name: "Create an account" }).click();
      await page.getByLabel("Name").fill("Ivan Invitee");
      await page.getByLabel("Email").fill(inviteeEmail);
      await page.getByLabel("Password").fill("correct horse battery");
      await page.getByRole("button", { name: "Create account" }).click();

      // ...and is asked to confirm it first, not told the invitation is someone else's.
      const confirm = page.getByRole("region", { name: "Confirm your email address to open this invitation" });
      await confirm.waitFor();
      expect(page.url()).toBe(`${origin}${invitationPath}`);
      expect(await page.getByText("This invitation was sent to a different email address.").count()).toBe(0);
      expect(await seriousAccessibilityViolations(page)).toEqual([]);
      await screenshot(page, "email-confirmation-invitation");
      // The sign-up's own link comes back to the invitation, and so does one asked for here.
      await waitFor(() => (mailbox.emailsTo(inviteeEmail).length === 2 ? true : undefined), { what: "the invitee's confirmation email" });
      expect(mailbox.linkFor(inviteeEmail)).toContain(`callbackURL=${encodeURIComponent(invitationPath)}`);
      await confirm.getByRole("button", { name: "Send the link again" }).click();
      await confirm.getByRole("status").getByText(`Sent: a new link is on its way to ${inviteeEmail}.`).waitFor();
      await waitFor(() => (mailbox.emailsTo(inviteeEmail).length === 3 ? true : undefined), { what: "the link asked for again" });
      const link = mailbox.linkFor(inviteeEmail);
      expect(link).toContain(`callbackURL=${encodeURIComponent(invitationPath)}`);

      await page.goto(link);
      expect(page.url()).toBe(`${origin}${invitationPath}`);
      await page.getByRole("heading", { name: "Join Olga's organization" }).waitFor();
      await page.getByRole("button", { name: "Accept invitation" }).click();
      await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
      const me = (await (await context.request.get("/me")).json()) as { data: { role: string } };
      expect(me.data.role).toBe("member");
      await context.close();
    },
    LONG,
  );
});
