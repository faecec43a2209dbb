import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { repoRoot, waitFor } from "../helpers.js";
import { ensureDashboardBuilt, launchChromium, screenshot, seriousAccessibilityViolations } from "./browser.js";

const PASSWORD = "correct horse battery";

/** What the page's own session sees, read with the page's cookie (the root tsconfig has no DOM types). */
interface Me {
  orgId: string;
  role: string | null;
}

describe("members and invitations in the dashboard (Better Auth organizations)", () => {
  let system: RunningSystem;
  let browser: Browser;

  beforeAll(async () => {
    const infra = testInfra();
    await ensureDashboardBuilt();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("memberse2e"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("memberse2e"),
      env: { MODE: "test", LOG_LEVEL: "info" },
    });
    browser = await launchChromium();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await system?.stop();
  });

  /** A fresh browser profile (no cookies) that records CSP violations and page errors. */
  async function newContext() {
    const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, baseURL: system.gatewayUrl });
    // Test files run side by side on two cores; give slow steps room rather than fail on a busy machine.
    context.setDefaultTimeout(60_000);
    const problems: string[] = [];
    context.on("page", (page) => {
      page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
      page.on("console", (message) => {
        if (/Content Security Policy|Refused to/i.test(message.text())) problems.push(`csp: ${message.text()}`);
      });
    });
    return { context, problems };
  }

  async function signUp(context: BrowserContext, name: string, email: string): Promise<Page> {
    const page = await context.newPage();
    await page.goto("/app/sign-up");
    await fillSignUp(page, name, email);
    await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
    return page;
  }

  async function fillSignUp(page: Page, name: string, email: string) {
    await page.getByRole("heading", { level: 1, name: "Create your account" }).waitFor();
    await page.getByLabel("Name").fill(name);
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill(PASSWORD);
    await page.getByRole("button", { name: "Create account" }).click();
  }

  const uniqueEmail = (who: string) => `${who}-${Date.now()}-${Math.random().toString(36).slice(2, 8)}@example.com`;

  const me = (page: Page) => page.evaluate(async () => ((await (await fetch("/me")).json()) as { data: Me }).data);

  /** Creates an API key with the page's session, as the dashboard does; returns the HTTP status. */
  const createKeyStatus = (page: Page) =>
    page.evaluate(async () => {
      // As the dashboard's API client does: the session's CSRF token from the rb_csrf cookie.
      const token = /(?:^|;\s*)rb_csrf=([^;]*)/.exec((globalThis as unknown as { document: { cookie: string } }).document.cookie)?.[1] ?? "";
      const headers = { "content-type": "application/json", "x-csrf-token": token };
      return (await fetch("/api-keys", { method: "POST", headers, body: JSON.stringify({ name: "from the test" }) })).status;
    });

  async function expectAccessible(page: Page) {
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
  }

  async function openMembers(page: Page) {
    await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Members" }).click();
    await page.getByRole("heading", { level: 1, name: "Members" }).waitFor();
    await page.getByRole("region", { name: "Members" }).waitFor();
  }

  it(
    "lets an owner invite someone by link, who joins as a member without key rights, is promoted to admin, then removed",
    async () => {
      const owner = await newContext();
      const ownerPage = await signUp(owner.context, "Olga Owner", uniqueEmail("olga"));
      const ownerOrg = await me(ownerPage);
      const ownerOrgName = await ownerPage.evaluate(async () => ((await (await fetch("/orgs/current")).json()) as { data: { name: string } }).data.name);
      expect(ownerOrg.role).toBe("owner");

      // The only owner sees themself, with no way to step down or leave (the org would have no owner).
      await openMembers(ownerPage);
      const ownerRow = ownerPage.locator("tr", { hasText: "(you)" });
      await ownerRow.getByText("owner", { exact: true }).waitFor();
      expect(await ownerRow.getByRole("combobox").count()).toBe(0);
      expect(await ownerRow.getByRole("button").count()).toBe(0);
      await ownerPage.getByText("No pending invitations").waitFor();
      await screenshot(ownerPage, "members-owner-alone");
      await expectAccessible(ownerPage);

      // Invite: there is no email, so the page hands over a link to share.
      const inviteeEmail = uniqueEmail("ivan");
      await ownerPage.getByLabel("Email").fill(inviteeEmail);
      await ownerPage.getByLabel("Role", { exact: true }).selectOption("member");
      await ownerPage.getByRole("button", { name: "Invite", exact: true }).click();
      const linkField = ownerPage.getByLabel("Invitation link");
      await linkField.waitFor();
      const link = await linkField.inputValue();
      expect(link).toMatch(new RegExp(`^${system.gatewayUrl}/app/invitations/[^/]+$`));
      await ownerPage.getByRole("button", { name: `Copy link for ${inviteeEmail}` }).waitFor();
      await screenshot(ownerPage, "members-invited");
      await expectAccessible(ownerPage);

      // The link opens only for the invited address: the owner opening it is told so.
      await ownerPage.goto(link);
      await ownerPage.getByText("This invitation was sent to a different email address.").waitFor();
      await ownerPage.goto("/app/settings/members");
      await ownerPage.getByRole("region", { name: "Pending invitations" }).getByRole("cell", { name: inviteeEmail, exact: true }).waitFor();

      // The invitee has no account yet: the link leads through sign-up and back to the invitation.
      const invitee = await newContext();
      const inviteePage = await invitee.context.newPage();
      await inviteePage.goto(link);
      await inviteePage.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
      await inviteePage.getByText("To see your invitation, sign in or create an account").waitFor();
      await expectAccessible(inviteePage);
      await inviteePage.getByRole("link", { name: "Create an account" }).click();
      await fillSignUp(inviteePage, "Ivan Invitee", inviteeEmail);
      await inviteePage.getByRole("heading", { level: 1, name: "Invitation" }).waitFor();
      expect(inviteePage.url()).toBe(link);
      const card = inviteePage.getByRole("region", { name: `Join ${ownerOrgName}` });
      await card.getByText("member", { exact: true }).waitFor();
      await screenshot(inviteePage, "invitation");
      await expectAccessible(inviteePage);
      const personalOrg = await me(inviteePage);
      expect(personalOrg.orgId).not.toBe(ownerOrg.orgId);

      await card.getByRole("button", { name: "Accept invitation" }).click();
      await inviteePage.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
      // The session now acts in the owner's org, as a member.
      expect(await me(inviteePage)).toMatchObject({ orgId: ownerOrg.orgId, role: "member" });
      // Two orgs now, so the shell offers a switch between them, set to the joined one.
      const switcher = inviteePage.getByLabel("Organization", { exact: true });
      await switcher.waitFor();
      expect(await switcher.inputValue()).toBe(ownerOrg.orgId);
      await screenshot(inviteePage, "invitee-joined");
      await expectAccessible(inviteePage);
      // The switcher shares the phone's top bar with the email and Sign out without widening the page.
      await inviteePage.setViewportSize({ width: 375, height: 812 });
      await screenshot(inviteePage, "phone-invitee-joined");
      await expectAccessible(inviteePage);
      expect(await inviteePage.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth")).toBeLessThanOrEqual(0);
      await inviteePage.setViewportSize({ width: 1280, height: 900 });

      // Members cannot make keys: the page says so and offers no form, and the API refuses.
      await inviteePage.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API keys" }).click();
      await inviteePage.getByText("Only owners and admins can create and revoke API keys").waitFor();
      expect(await inviteePage.getByRole("button", { name: "Create key" }).count()).toBe(0);
      expect(await createKeyStatus(inviteePage)).toBe(403);
      await openMembers(inviteePage);
      await inviteePage.locator("tr", { hasText: "Olga Owner" }).waitFor();
      expect(await inviteePage.getByRole("combobox", { name: /^Role of/ }).count()).toBe(0);
      await screenshot(inviteePage, "members-as-member");
      await expectAccessible(inviteePage);

      // Switching back to the personal org moves the API with it, and back again.
      await switcher.selectOption(personalOrg.orgId);
      await waitFor(async () => ((await me(inviteePage)).orgId === personalOrg.orgId ? true : undefined), { what: "the personal org to be active" });
      await switcher.selectOption(ownerOrg.orgId);
      await waitFor(async () => ((await me(inviteePage)).orgId === ownerOrg.orgId ? true : undefined), { what: "the owner's org to be active again" });

      // The owner promotes the new member; the member's next request has admin rights.
      await ownerPage.reload();
      const inviteeRow = ownerPage.locator("tr", { hasText: inviteeEmail });
      await inviteeRow.waitFor();
      expect(await ownerPage.getByRole("region", { name: "Pending invitations" }).getByRole("cell", { name: inviteeEmail, exact: true }).count()).toBe(0);
      await inviteeRow.getByRole("combobox", { name: "Role of Ivan Invitee" }).selectOption("admin");
      await ownerPage.getByText("Ivan Invitee is now admin.").waitFor();
      expect(await me(inviteePage)).toMatchObject({ orgId: ownerOrg.orgId, role: "admin" });
      expect(await createKeyStatus(inviteePage)).toBe(201);

      // Removal asks first, then takes the org away from them.
      await inviteeRow.getByRole("button", { name: "Remove Ivan Invitee" }).click();
      const dialog = ownerPage.getByRole("dialog", { name: "Remove Ivan Invitee?" });
      await dialog.waitFor();
      await dialog.getByText(/their API keys stop working/).waitFor();
      await expectAccessible(ownerPage);
      await screenshot(ownerPage, "members-remove-confirm");
      await dialog.getByRole("button", { name: "Remove member" }).click();
      await ownerPage.getByText(`Ivan Invitee was removed from ${ownerOrgName}.`).waitFor();
      await inviteeRow.waitFor({ state: "detached" });

      // Their session no longer reaches the owner's org: refused, or back in their personal org.
      const after = await inviteePage.evaluate(async () => {
        const response = await fetch("/me");
        return { status: response.status, body: (await response.json()) as { data?: Me } };
      });
      if (after.status === 200) expect(after.body.data!.orgId).toBe(personalOrg.orgId);
      else expect(after.status).toBe(403);

      expect(owner.problems).toEqual([]);
      expect(invitee.problems).toEqual([]);
      await invitee.context.close();
      await owner.context.close();
    },
    300_000,
  );

  it("cancels an invitation so its link stops working, lets a member leave, and lays the page out on a phone", async () => {
    const owner = await newContext();
    const page = await signUp(owner.context, "Carla Cancel", uniqueEmail("carla"));
    await openMembers(page);
    const inviteeEmail = uniqueEmail("nobody");
    await page.getByLabel("Email").fill(inviteeEmail);
    await page.getByLabel("Role", { exact: true }).selectOption("admin");
    await page.getByRole("button", { name: "Invite", exact: true }).click();
    const link = await page.getByLabel("Invitation link").inputValue();
    const invitations = page.getByRole("region", { name: "Pending invitations" });
    await invitations.locator("tr", { hasText: inviteeEmail }).getByText("admin", { exact: true }).waitFor();

    await page.setViewportSize({ width: 375, height: 812 });
    await screenshot(page, "phone-members-owner");
    await expectAccessible(page);
    const overflow = await page.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth");
    expect(overflow).toBeLessThanOrEqual(0);
    await page.setViewportSize({ width: 1280, height: 900 });

    await page.getByRole("button", { name: `Cancel invitation for ${inviteeEmail}` }).click();
    await page.getByText(`The invitation for ${inviteeEmail} was cancelled`).waitFor();
    await page.getByText("No pending invitations").waitFor();

    // The invitee signs up and opens the cancelled link: it says the invitation is gone.
    const invitee = await newContext();
    const inviteePage = await signUp(invitee.context, "Nobody Late", inviteeEmail);
    await inviteePage.goto(link);
    await inviteePage.getByText("This invitation is no longer valid.").waitFor();
    await expectAccessible(inviteePage);

    // Invited again, they join, then leave on their own: the session goes back to their personal org.
    const personalOrg = await me(inviteePage);
    await page.getByLabel("Email").fill(inviteeEmail);
    await page.getByRole("button", { name: "Invite", exact: true }).click();
    await page.getByRole("region", { name: "Pending invitations" }).getByRole("cell", { name: inviteeEmail, exact: true }).waitFor();
    const secondLink = await page.getByLabel("Invitation link").inputValue();
    expect(secondLink).not.toBe(link);
    await inviteePage.goto(secondLink);
    await inviteePage.getByRole("button", { name: "Accept invitation" }).click();
    await inviteePage.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
    expect((await me(inviteePage)).orgId).not.toBe(personalOrg.orgId);
    await openMembers(inviteePage);
    await inviteePage.getByRole("button", { name: "Leave organization" }).click();
    await inviteePage.getByRole("dialog", { name: /^Leave / }).getByRole("button", { name: "Leave organization" }).click();
    await inviteePage.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
    expect((await me(inviteePage)).orgId).toBe(personalOrg.orgId);
    // Back to one org, so the switcher is gone.
    await waitFor(async () => ((await inviteePage.getByLabel("Organization", { exact: true }).count()) === 0 ? true : undefined), { what: "the org switcher to go" });

    // A sign-in link cannot send anyone off the site.
    const stranger = await newContext();
    const strangerPage = await stranger.context.newPage();
    await strangerPage.goto("/app/sign-in?next=//evil.example/steal");
    await strangerPage.getByLabel("Email").fill(inviteeEmail);
    await strangerPage.getByLabel("Password").fill(PASSWORD);
    await strangerPage.getByRole("button", { name: "Sign in" }).click();
    await strangerPage.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
    expect(strangerPage.url()).toBe(`${system.gatewayUrl}/app/jobs`);

    expect([...owner.problems, ...invitee.problems, ...stranger.problems]).toEqual([]);
    await Promise.all([owner.context.close(), invitee.context.close(), stranger.context.close()]);
  }, 180_000);
});
