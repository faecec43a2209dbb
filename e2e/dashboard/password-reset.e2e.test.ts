import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, BrowserContext, Page } from "playwright-core";
import type { Mailbox, RunningSystem } from "@renderbus/testing";
import { waitFor } from "../helpers.js";
import { screenshot, seriousAccessibilityViolations } from "./browser.js";
import { startDashboardRig, type DashboardRig } from "./dashboard-rig.js";

const LONG = 180_000;

/** Where the dashboard's reset links land (apps/dashboard/src/pages/PasswordResetPages.tsx). */
const REDIRECT = "/app/reset-password";
const SENT = (email: string) => `If an account uses ${email}, a link to reset its password is on its way. It works for 1 hour.`;
const CHANGED = "Password changed. Sign in with your new password.";

/** A browser context on the system's gateway that collects page errors and CSP refusals. */
async function newPage(browser: Browser, gatewayUrl: string): Promise<{ context: BrowserContext; page: Page; problems: string[] }> {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, baseURL: gatewayUrl });
  context.setDefaultTimeout(60_000);
  const page = await context.newPage();
  const problems: string[] = [];
  page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  page.on("console", (message) => {
    if (/Content Security Policy|Refused to/i.test(message.text())) problems.push(`csp: ${message.text()}`);
  });
  return { context, page, problems };
}

async function signIn(page: Page, email: string, password: string) {
  await page.getByLabel("Email").fill(email);
  await page.getByLabel("Password").fill(password);
  await page.getByRole("button", { name: "Sign in" }).click();
}

async function askForLink(page: Page, email: string) {
  await page.getByRole("heading", { level: 1, name: "Reset your password" }).waitFor();
  await page.getByLabel("Email").fill(email);
  await page.getByRole("button", { name: "Send the link" }).click();
}

describe("resetting a forgotten password from the dashboard, in a real browser with a real mail server", () => {
  let rig: DashboardRig;
  let mailbox: Mailbox;
  let system: RunningSystem;
  let browser: Browser;

  beforeAll(async () => {
    rig = await startDashboardRig("dashreset", { mail: true });
    ({ system, browser } = rig);
    mailbox = rig.mailbox!;
  }, 240_000);

  afterAll(() => rig?.stop());

  /** Waits for the `count`th email to `email` and returns the reset link in it. */
  async function resetLinkIn(email: string, count: number): Promise<string> {
    await waitFor(() => (mailbox.emailsTo(email).length >= count ? true : undefined), { what: `email number ${count} to ${email}` });
    expect(mailbox.emailsTo(email)).toHaveLength(count);
    const link = mailbox.linkFor(email, "/auth/reset-password/");
    expect(link).toMatch(new RegExp(`^${system.gatewayUrl}/auth/reset-password/[A-Za-z0-9]+\\?callbackURL=${encodeURIComponent(REDIRECT)}$`));
    return link;
  }

  // Five password-reset posts (two asks, three resets) spend the gateway's per-IP budget for them to the last
  // (AUTH_PASSWORD_RESET_PER_IP_LIMIT, 5 per 15 minutes): one more in this system would answer 429.
  it(
    "emails a link from the sign-in page that sets a new password once, signed out or signed in, and signs the account out",
    async () => {
      const { context, page, problems } = await newPage(browser, system.gatewayUrl);
      const email = `riley-${Date.now()}@example.com`;
      const [original, changed, changedAgain] = ["correct horse battery", "a brand new passphrase", "yet another passphrase"];

      await page.goto("/app/sign-up");
      await page.getByLabel("Name").fill("Riley Reset");
      await page.getByLabel("Email").fill(email);
      await page.getByLabel("Password").fill(original);
      await page.getByRole("button", { name: "Create account" }).click();
      await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
      // The sign-up's confirmation email comes first, so the next one to this address is the reset's.
      await waitFor(() => (mailbox.emailsTo(email).length === 1 ? true : undefined), { what: "the sign-up's email" });
      await page.getByRole("button", { name: "Sign out" }).click();
      await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();

      // Signed out: from the sign-in page to the form, which says the same whatever the address.
      await page.getByRole("link", { name: "Forgot your password?" }).click();
      expect(new URL(page.url()).pathname).toBe("/app/forgot-password");
      await askForLink(page, email);
      await page.getByRole("status").getByText(SENT(email)).waitFor();
      expect(await seriousAccessibilityViolations(page)).toEqual([]);
      await screenshot(page, "password-reset-requested");

      // The link lands on the reset form, with the token.
      const link = await resetLinkIn(email, 2);
      await page.goto(link);
      await page.getByRole("heading", { level: 1, name: "Choose a new password" }).waitFor();
      expect(new URL(page.url()).pathname).toBe(REDIRECT);
      const token = new URL(page.url()).searchParams.get("token");
      expect(token).toBeTruthy();
      const newPassword = page.getByLabel("New password", { exact: true });
      const confirmation = page.getByLabel("Confirm new password", { exact: true });
      expect(await newPassword.getAttribute("autocomplete")).toBe("new-password");
      expect(await confirmation.getAttribute("autocomplete")).toBe("new-password");
      expect(await seriousAccessibilityViolations(page)).toEqual([]);

      // Two different passwords go nowhere (nor does the link get used).
      await newPassword.fill(changed);
      await confirmation.fill("a different passphrase");
      await page.getByRole("button", { name: "Change password" }).click();
      await page.getByText("The two passwords do not match.").waitFor();
      expect(await confirmation.getAttribute("aria-invalid")).toBe("true");
      expect(new URL(page.url()).pathname).toBe(REDIRECT);
      expect(await seriousAccessibilityViolations(page)).toEqual([]);
      await screenshot(page, "password-reset-mismatch");

      await confirmation.fill(changed);
      await page.getByRole("button", { name: "Change password" }).click();
      await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
      expect(new URL(page.url()).pathname).toBe("/app/sign-in");
      await page.getByRole("status").getByText(CHANGED).waitFor();
      expect(await seriousAccessibilityViolations(page)).toEqual([]);
      await screenshot(page, "password-reset-changed");

      // The old password no longer works; the new one does.
      await signIn(page, email, original);
      const alert = page.getByRole("alert");
      await alert.waitFor();
      expect(await alert.innerText()).toMatch(/invalid email or password/i);
      await signIn(page, email, changed);
      await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();

      // Signed in: the used link lands on the reset page (not moved on to Jobs), which says it is not valid.
      await page.goto(link);
      await page.getByRole("alert").getByText("This reset link is not valid or has expired.").waitFor();
      expect(page.url()).toBe(`${system.gatewayUrl}${REDIRECT}?error=INVALID_TOKEN`);
      await page.getByRole("link", { name: "Back to your jobs" }).waitFor();
      expect(await page.getByLabel("New password", { exact: true }).count()).toBe(0);
      expect(await seriousAccessibilityViolations(page)).toEqual([]);
      await screenshot(page, "password-reset-invalid-link");

      // The used token, submitted again from a form kept open (a second tab, say), is refused and said so.
      await page.goto(`${REDIRECT}?token=${token}`);
      await page.getByLabel("New password", { exact: true }).fill(changedAgain);
      await page.getByLabel("Confirm new password", { exact: true }).fill(changedAgain);
      await page.getByRole("button", { name: "Change password" }).click();
      await page.getByRole("alert").getByText("This reset link is no longer valid: it was used already or has expired.").waitFor();
      expect(new URL(page.url()).pathname).toBe(REDIRECT);

      // Still signed in: another link, and a new password through it, which signs this browser out too.
      await page.getByRole("link", { name: "Ask for a new link" }).click();
      await askForLink(page, email);
      await page.getByRole("status").getByText(SENT(email)).waitFor();
      const secondLink = await resetLinkIn(email, 3);
      await page.goto(secondLink);
      await page.getByRole("heading", { level: 1, name: "Choose a new password" }).waitFor();
      expect(new URL(page.url()).pathname).toBe(REDIRECT);
      await page.getByLabel("New password", { exact: true }).fill(changedAgain);
      await page.getByLabel("Confirm new password", { exact: true }).fill(changedAgain);
      await page.getByRole("button", { name: "Change password" }).click();
      await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
      await page.getByRole("status").getByText(CHANGED).waitFor();
      expect(await page.evaluate(async () => (await fetch("/me")).status)).toBe(401);
      await signIn(page, email, changedAgain);
      await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();

      expect(problems).toEqual([]);
      await context.close();
    },
    LONG,
  );
});

describe("password reset on a deployment without a mail server", () => {
  let rig: DashboardRig;
  let system: RunningSystem;
  let browser: Browser;

  beforeAll(async () => {
    rig = await startDashboardRig("dashresetoff");
    ({ system, browser } = rig);
  }, 240_000);

  afterAll(() => rig?.stop());

  it("says it is not available here and to ask an operator", async () => {
    const { context, page, problems } = await newPage(browser, system.gatewayUrl);
    await page.goto("/app/sign-in");
    await page.getByRole("link", { name: "Forgot your password?" }).click();
    const answer = page.waitForResponse((response) => new URL(response.url()).pathname === "/auth/request-password-reset");
    await askForLink(page, "someone@example.com");
    // What the page recognises: Better Auth's RESET_PASSWORD_DISABLED, restated in the gateway's envelope.
    const response = await answer;
    expect(response.status()).toBe(400);
    expect(await response.json()).toMatchObject({ error: { code: "VALIDATION_ERROR", message: "Reset password isn't enabled" } });
    const alert = page.getByRole("alert");
    await alert.getByText("Password reset is not available here", { exact: false }).waitFor();
    expect(await alert.innerText()).toMatch(/ask its operator/i);
    expect(await page.getByRole("status").innerText()).toBe("");
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
    await screenshot(page, "password-reset-unavailable");
    expect(problems).toEqual([]);
    await context.close();
  }, LONG);
});
