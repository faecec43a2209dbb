import { createServer } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, BrowserContext, Page } from "playwright-core";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { admin, makeTestVideo, repoRoot, startFileServer, startReceiver, waitFor } from "../helpers.js";
import { ensureDashboardBuilt, launchChromium, screenshot, seriousAccessibilityViolations } from "./browser.js";

/** The bits of an HTMLImageElement the test reads (the root tsconfig has no DOM types). */
interface LoadedImage {
  complete: boolean;
  naturalWidth: number;
}
const LONG = 90_000;

describe("the dashboard in a real browser against the running system", () => {
  let system: RunningSystem;
  let browser: Browser;
  let media: Awaited<ReturnType<typeof startFileServer>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    const infra = testInfra();
    const [mediaDir] = await Promise.all([makeTestVideo(), ensureDashboardBuilt()]);
    media = await startFileServer(mediaDir);
    receiver = await startReceiver();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("dashe2e"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("dashe2e"),
      // A self-hoster's plan override (PLANS_JSON): the Billing page shows the limits the API enforces, not the defaults.
      env: { MODE: "test", LOG_LEVEL: "info", WEBHOOK_RETRY_SCHEDULE_MS: "200,400,800", WEBHOOK_TIMEOUT_MS: "5000", PLANS_JSON: JSON.stringify({ starter: { requestsPerMinute: 4321 } }) },
    });
    browser = await launchChromium();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await system?.stop();
    await media?.close();
    await receiver?.close();
  });

  /** A fresh browser profile (no cookies) that records CSP violations and page errors. */
  async function newContext(viewport: { width: number; height: number }) {
    const context = await browser.newContext({ viewport, baseURL: system.gatewayUrl });
    // Four test runs share two cores here; give slow steps room rather than fail on a busy machine.
    context.setDefaultTimeout(60_000);
    const problems: string[] = [];
    context.on("page", (page) => watchPage(page, problems));
    return { context, problems };
  }

  function watchPage(page: Page, problems: string[]) {
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    page.on("console", (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) problems.push(`csp: ${message.text()}`);
    });
  }

  async function signUp(context: BrowserContext, name: string) {
    const page = await context.newPage();
    const email = `${name.toLowerCase().replace(/\W/g, "")}-${Date.now()}@example.com`;
    await page.goto("/app/");
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    await page.getByRole("link", { name: "Create an account" }).click();
    await page.getByRole("heading", { level: 1, name: "Create your account" }).waitFor();
    await page.getByLabel("Name").fill(name);
    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Create account" }).click();
    await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
    const me = await page.evaluate(async () => ((await (await fetch("/me")).json()) as { data: { orgId: string; plan: string } }).data);
    return { page, email, orgId: me.orgId };
  }

  async function expectAccessible(page: Page) {
    expect(await seriousAccessibilityViolations(page)).toEqual([]);
  }

  const bearer = (key: string) => fetch(`${system.gatewayUrl}/me`, { headers: { authorization: `Bearer ${key}` } });

  it(
    "lets a new user sign up, make and revoke a key, set up webhooks, submit a job and watch it complete, without reading the API docs",
    async () => {
      const { context, problems } = await newContext({ width: 1280, height: 900 });
      const { page, orgId } = await signUp(context, "Dana Dashboard");
      expect(page.url()).toBe(`${system.gatewayUrl}/app/jobs`);
      await page.getByText("No jobs yet").waitFor();
      await screenshot(page, "flow-jobs-empty");
      await expectAccessible(page);

      // API keys: created and shown once with a copy button and a warning.
      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "API keys" }).click();
      await page.getByRole("heading", { level: 1, name: "API keys" }).waitFor();
      await page.getByLabel("Key name").fill("ci server");
      await page.getByRole("button", { name: "Create key" }).click();
      const keyField = page.getByLabel("New API key");
      await keyField.waitFor();
      const key = await keyField.inputValue();
      expect(key).toMatch(/^rb_[A-Za-z0-9_-]{32,}$/);
      await expect(page.getByText("It is shown only once").isVisible()).resolves.toBe(true);
      await expect(page.getByRole("button", { name: "Copy key" }).isVisible()).resolves.toBe(true);
      expect((await bearer(key)).status).toBe(200);
      await screenshot(page, "flow-api-key-created");
      await expectAccessible(page);

      await page.reload();
      await page.getByRole("heading", { level: 1, name: "API keys" }).waitFor();
      const row = page.locator("tr", { hasText: "ci server" });
      await row.waitFor();
      expect(await page.getByLabel("New API key").count()).toBe(0);
      expect(await page.locator("body").innerText()).not.toContain(key);
      expect(await row.innerText()).toContain(key.slice(0, 6));

      // Revoke with confirmation: the key stops working at once.
      await page.getByRole("button", { name: "Revoke key ci server" }).click();
      const dialog = page.getByRole("dialog", { name: /Revoke/ });
      await dialog.waitFor();
      await expectAccessible(page);
      await dialog.getByRole("button", { name: "Revoke key" }).click();
      await page.getByText("was revoked").waitFor();
      await row.getByText("revoked", { exact: true }).waitFor();
      expect((await bearer(key)).status).toBe(401);
      await screenshot(page, "flow-api-keys");

      // Webhooks need Starter: free shows the notice, then the operator moves the org to Starter.
      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Webhooks" }).click();
      await page.getByText("Webhooks are not included in the free plan").waitFor();
      await screenshot(page, "flow-webhooks-free");
      await expectAccessible(page);
      await admin(system.env, "org:set-plan", "--org", orgId, "--plan", "starter");
      await page.reload();
      await page.getByLabel("Endpoint URL").waitFor();
      await waitFor(async () => ((await page.getByText("not included in the free plan").count()) === 0 ? true : (await page.reload(), undefined)), {
        timeoutMs: 30_000,
        intervalMs: 1000,
        what: "the starter plan to show",
      });
      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Billing" }).click();
      await page.getByText("4,321 API requests per minute").waitFor();
      await page.getByText("1,900 credits included each month").waitFor();
      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Webhooks" }).click();
      await page.getByLabel("Endpoint URL").waitFor();
      await page.getByLabel("Endpoint URL").fill(receiver.url);
      await page.getByLabel("Signing secret").fill("whsec_dashboard_test_secret");
      await page.getByRole("button", { name: "Save webhook settings" }).click();
      await page.getByText("Webhook settings saved.").waitFor();
      expect(await page.getByLabel("Signing secret").inputValue()).toBe("");

      await page.getByRole("button", { name: "Send test event" }).click();
      await page.getByText(/Test event delivered/).waitFor({ timeout: LONG });
      await waitFor(() => receiver.received.find((hook) => hook.headers["x-renderbus-event"] === "webhook.test"), { timeoutMs: LONG, what: "webhook.test at the receiver" });
      await page.getByRole("button", { name: "Refresh" }).click();
      await page.getByRole("region", { name: "Recent deliveries" }).getByText("webhook.test").first().waitFor();
      await screenshot(page, "flow-webhooks");
      await expectAccessible(page);

      // A job from the generated form, followed live on its page.
      await page.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Jobs" }).click();
      await page.getByRole("link", { name: "New job" }).click();
      await page.getByRole("heading", { level: 1, name: "New job" }).waitFor();
      await page.getByLabel("Job type").selectOption("thumbnail");
      await page.getByLabel("Source URL").fill(media.url("clip.mp4"));
      await page.getByLabel("Format").selectOption("png");
      await page.getByLabel("Width").fill("160");
      await screenshot(page, "flow-new-job");
      await expectAccessible(page);
      await page.evaluate(() => ((globalThis as { notReloaded?: boolean }).notReloaded = true));
      await page.getByRole("button", { name: "Submit job" }).click();
      await page.waitForURL(/\/app\/jobs\/job_/);
      const jobId = /job_[0-9A-Za-z]+/.exec(page.url())![0];
      await page.locator(".status-line [data-status='completed']").waitFor({ timeout: LONG });
      expect(await page.evaluate(() => (globalThis as { notReloaded?: boolean }).notReloaded)).toBe(true);

      // The result: a loaded preview and a working download link.
      const preview = page.getByRole("img", { name: "Result of the thumbnail job" });
      await preview.waitFor();
      await waitFor(() => preview.evaluate((image) => ((image as unknown as LoadedImage).complete && (image as unknown as LoadedImage).naturalWidth > 0) || undefined), { timeoutMs: 30_000, what: "the preview to load" });
      expect(await preview.evaluate((image) => (image as unknown as LoadedImage).naturalWidth)).toBe(160);
      const href = await page.getByRole("link", { name: "Download result" }).getAttribute("href");
      const download = await fetch(new URL(href!, system.gatewayUrl));
      expect(download.status).toBe(200);
      expect(download.headers.get("content-type")).toMatch(/^image\/png/);
      await page.getByText(/^\d+ credits?$/).first().waitFor();

      // The webhook deliveries of this job, with a retry that sends job.completed again.
      const deliveries = page.getByRole("region", { name: "Webhook deliveries" });
      const completedRow = deliveries.locator("tr", { hasText: "job.completed" });
      await completedRow.locator("[data-status='succeeded']").waitFor({ timeout: LONG });
      await deliveries.locator("tr", { hasText: "job.running" }).waitFor();
      // Each attempt of a delivery: when, what the receiver answered, how long it took.
      await completedRow.getByText("1 attempt", { exact: true }).click();
      await completedRow.getByText(/#1 at .* HTTP 200 in \d+ ms/).waitFor();
      await screenshot(page, "flow-job-detail");
      await expectAccessible(page);
      const completedHooks = () => receiver.received.filter((hook) => hook.headers["x-renderbus-event"] === "job.completed" && JSON.parse(hook.rawBody.toString()).jobId === jobId);
      await waitFor(() => completedHooks().length >= 1 || undefined, { timeoutMs: LONG, what: "job.completed at the receiver" });
      // Delivery is at least once, so count from whatever has arrived so far.
      const before = completedHooks().length;
      await completedRow.getByRole("button", { name: "Retry job.completed delivery" }).click();
      await page.getByText(/was sent again/).waitFor();
      await waitFor(() => completedHooks().length > before || undefined, { timeoutMs: LONG, what: "the retried job.completed" });
      const hooks = completedHooks();
      expect(hooks.at(-1)!.headers["x-renderbus-delivery"]).toBe(hooks[0]!.headers["x-renderbus-delivery"]);

      // The list shows the finished job too.
      await page.getByRole("link", { name: "Jobs", exact: true }).first().click();
      await page.locator(`tr[data-job-id='${jobId}'] [data-status='completed']`).waitFor();
      await screenshot(page, "flow-jobs");
      await expectAccessible(page);

      expect(problems).toEqual([]);
      await context.close();
    },
    300_000,
  );

  it(
    "shows every main page, its empty and filled states, on a laptop and at 375 px phone width with no serious accessibility violations",
    async () => {
      for (const viewport of [
        { name: "desktop", width: 1280, height: 900 },
        { name: "phone", width: 375, height: 812 },
      ]) {
        const { context, problems } = await newContext(viewport);
        const page = await context.newPage();
        await page.goto("/app/sign-in");
        await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
        await screenshot(page, `${viewport.name}-sign-in`);
        await expectAccessible(page);
        await page.close();

        const { page: signedIn, orgId } = await signUp(context, `Pat ${viewport.name}`);
        await admin(system.env, "org:set-plan", "--org", orgId, "--plan", "starter");
        // Content for the lists: a small batch of QR codes submitted with the session, as the dashboard would.
        const batch = await signedIn.evaluate(async () => {
          // As the dashboard's API client does: the session's CSRF token from the rb_csrf cookie.
          const token = /(?:^|;\s*)rb_csrf=([^;]*)/.exec((globalThis as unknown as { document: { cookie: string } }).document.cookie)?.[1] ?? "";
          const response = await fetch("/batches", {
            method: "POST",
            headers: { "content-type": "application/json", "x-csrf-token": token },
            body: JSON.stringify({ jobs: [1, 2].map((n) => ({ type: "qr.generate", params: { content: `item ${n}` } })) }),
          });
          return ((await response.json()) as { data: { id: string } }).data;
        });

        const pages: { path: string; heading: string; name: string; ready?: string }[] = [
          { path: "/app/jobs", heading: "Jobs", name: "jobs", ready: batch.id },
          { path: "/app/jobs/new", heading: "New job", name: "new-job", ready: "Submit job" },
          { path: "/app/batches", heading: "Batches", name: "batches", ready: batch.id },
          { path: `/app/batches/${batch.id}`, heading: "Batch", name: "batch-detail", ready: "Details" },
          { path: "/app/billing", heading: "Billing", name: "billing", ready: "Usage ledger" },
          { path: "/app/settings/api-keys", heading: "API keys", name: "api-keys", ready: "No API keys yet" },
          { path: "/app/settings/webhooks", heading: "Webhooks", name: "webhooks", ready: "Endpoint URL" },
          { path: "/app/settings/members", heading: "Members", name: "members", ready: "(you)" },
        ];
        for (const target of pages) {
          await signedIn.goto(target.path);
          await signedIn.getByRole("heading", { level: 1, name: target.heading, exact: true }).waitFor();
          if (target.ready) await signedIn.getByText(target.ready).first().waitFor();
          await waitFor(async () => (await signedIn.locator(".loading").count()) === 0 || undefined, { timeoutMs: 30_000, what: `${target.path} to load` });
          await screenshot(signedIn, `${viewport.name}-${target.name}`);
          await expectAccessible(signedIn);
          // Nothing is wider than the screen: tables scroll inside their own region instead.
          const overflow = await signedIn.evaluate<number>("document.documentElement.scrollWidth - window.innerWidth");
          expect(overflow, `${target.path} at ${viewport.width}px`).toBeLessThanOrEqual(0);
        }

        const firstJob = await signedIn.evaluate(async () => ((await (await fetch("/jobs?limit=1")).json()) as { data: { id: string }[] }).data[0]!.id);
        await signedIn.goto(`/app/jobs/${firstJob}`);
        await signedIn.locator(".status-line [data-status='completed']").waitFor({ timeout: LONG });
        await signedIn.getByRole("img", { name: /Result of the qr.generate job/ }).waitFor();
        await screenshot(signedIn, `${viewport.name}-job-detail`);
        await expectAccessible(signedIn);

        if (viewport.name === "phone") {
          // The navigation folds behind a Menu button that works from the keyboard.
          const menu = signedIn.getByRole("button", { name: "Menu" });
          await menu.focus();
          await signedIn.keyboard.press("Enter");
          expect(await menu.getAttribute("aria-expanded")).toBe("true");
          await signedIn.getByRole("navigation", { name: "Main" }).getByRole("link", { name: "Billing" }).click();
          await signedIn.getByRole("heading", { level: 1, name: "Billing" }).waitFor();
        }
        expect(problems).toEqual([]);
        await context.close();
      }
    },
    300_000,
  );

  it("filters the jobs list by status, type and batch from the form and the URL, and opens a failed job's error", async () => {
    const { context, problems } = await newContext({ width: 1280, height: 900 });
    const { page } = await signUp(context, "Fay Filters");
    // Three jobs, as the dashboard's own client would send them (session cookie and CSRF token): a batch of two QR
    // codes and a metadata job whose source refuses connections, so it fails.
    const submitted = await page.evaluate(async () => {
      const token = /(?:^|;\s*)rb_csrf=([^;]*)/.exec((globalThis as unknown as { document: { cookie: string } }).document.cookie)?.[1] ?? "";
      const post = async (path: string, body: unknown) =>
        ((await (await fetch(path, { method: "POST", headers: { "content-type": "application/json", "x-csrf-token": token }, body: JSON.stringify(body) })).json()) as { data: { id: string; jobs?: { id: string }[] } }).data;
      const batch = await post("/batches", { jobs: [1, 2].map((n) => ({ type: "qr.generate", params: { content: `filter ${n}` } })) });
      const failing = await post("/jobs", { type: "extract.metadata", inputs: { source: "http://127.0.0.1:1/missing.mp4" } });
      return { batchId: batch.id, failingId: failing.id };
    });
    await waitFor(
      async () => {
        const jobs = await page.evaluate(async () => ((await (await fetch("/jobs?limit=10")).json()) as { data: { status: string }[] }).data);
        return jobs.length === 3 && jobs.every((job) => job.status === "completed" || job.status === "failed") ? true : undefined;
      },
      { timeoutMs: LONG, intervalMs: 500, what: "the three jobs to finish" },
    );
    const rows = page.locator("tr[data-job-id]");
    const listed = async (count: number) => {
      await waitFor(async () => ((await rows.count()) === count ? true : undefined), { timeoutMs: 30_000, what: `${count} rows` });
      return rows.evaluateAll((elements) => elements.map((element) => element.getAttribute("data-job-id")));
    };

    await page.goto("/app/jobs");
    expect(await listed(3)).toContain(submitted.failingId);
    const filters = page.getByRole("form", { name: "Filter jobs" });
    await filters.getByLabel("Status").selectOption("failed");
    await filters.getByRole("button", { name: "Apply filters" }).click();
    expect(await listed(1)).toEqual([submitted.failingId]);
    expect(new URL(page.url()).searchParams.get("status")).toBe("failed");
    await expectAccessible(page);

    // Clear brings every job back; the batch id alone lists the batch's two.
    await filters.getByRole("button", { name: "Clear" }).click();
    expect(await listed(3)).toHaveLength(3);
    await filters.getByLabel("Batch id").fill(submitted.batchId);
    await filters.getByRole("button", { name: "Apply filters" }).click();
    expect(await listed(2)).not.toContain(submitted.failingId);
    await expect(rows.first().getByRole("link", { name: submitted.batchId }).isVisible()).resolves.toBe(true);

    // A filtered URL opened directly fills the form and the list.
    await page.goto("/app/jobs?type=extract.metadata");
    expect(await listed(1)).toEqual([submitted.failingId]);
    expect(await filters.getByLabel("Type").inputValue()).toBe("extract.metadata");

    await rows.first().getByRole("link", { name: submitted.failingId }).click();
    await page.locator(".status-line [data-status='failed']").waitFor();
    expect(await page.locator(".alert-error").innerText()).toMatch(/^INPUT_ERROR: /);
    await screenshot(page, "desktop-job-failed");
    await expectAccessible(page);
    expect(problems).toEqual([]);
    await context.close();
  }, 240_000);

  it("cancels a job in progress from its page after asking, and the page shows it cancelled", async () => {
    // An input that trickles in a byte a second: the worker is still downloading it when the job is cancelled.
    const sockets = new Set<Socket>();
    const hanging = createServer((_request, response) => {
      response.writeHead(200, { "content-type": "video/mp4", "content-length": "1000000" });
      const timer = setInterval(() => response.write("x"), 1000);
      response.on("close", () => clearInterval(timer));
    });
    hanging.on("connection", (socket) => (sockets.add(socket), socket.on("close", () => sockets.delete(socket))));
    await new Promise<void>((done) => hanging.listen(0, "127.0.0.1", done));
    const { context, problems } = await newContext({ width: 1280, height: 900 });
    try {
      const { page } = await signUp(context, "Cal Cancel");
      const source = `http://127.0.0.1:${(hanging.address() as AddressInfo).port}/slow.mp4`;
      const jobId = await page.evaluate(async (input) => {
        const token = /(?:^|;\s*)rb_csrf=([^;]*)/.exec((globalThis as unknown as { document: { cookie: string } }).document.cookie)?.[1] ?? "";
        const response = await fetch("/jobs", { method: "POST", headers: { "content-type": "application/json", "x-csrf-token": token }, body: JSON.stringify({ type: "extract.metadata", inputs: { source: input } }) });
        return ((await response.json()) as { data: { id: string } }).data.id;
      }, source);
      await page.goto(`/app/jobs/${jobId}`);
      await page.locator(".status-line [data-status='dispatched']").waitFor({ timeout: LONG });
      await page.getByText("updating live").waitFor();

      await page.getByRole("button", { name: "Cancel job" }).click();
      const dialog = page.getByRole("dialog", { name: "Cancel this job?" });
      await dialog.waitFor();
      await expectAccessible(page);
      await dialog.getByRole("button", { name: "Cancel job" }).click();
      await page.locator(".status-line [data-status='cancelled']").waitFor();
      expect(await page.getByRole("button", { name: "Cancel job" }).count()).toBe(0);
      const status = await page.evaluate(async (id) => ((await (await fetch(`/jobs/${id}`)).json()) as { data: { status: string } }).data.status, jobId);
      expect(status).toBe("cancelled");
      expect(problems).toEqual([]);
    } finally {
      await context.close();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((done) => hanging.close(() => done()));
    }
  }, 240_000);

  it("signs out and back in, and shows a wrong password as a readable message", async () => {
    const { context } = await newContext({ width: 1280, height: 900 });
    const { page, email } = await signUp(context, "Sam Signout");
    // Keyboard first: on a fresh load Tab reaches the skip link, then the brand and navigation, each with a visible
    // focus ring.
    await page.reload();
    await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
    await page.keyboard.press("Tab");
    const focused = () => page.evaluate<{ text: string; outline: string }>("({ text: document.activeElement.textContent.trim(), outline: getComputedStyle(document.activeElement).outlineStyle })");
    expect(await focused()).toEqual({ text: "Skip to content", outline: "solid" });
    await page.keyboard.press("Tab");
    await page.keyboard.press("Tab");
    expect((await focused()).outline).toBe("solid");
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("heading", { level: 1, name: "Sign in" }).waitFor();
    expect((await page.evaluate(async () => (await fetch("/me")).status))).toBe(401);

    await page.getByLabel("Email").fill(email);
    await page.getByLabel("Password").fill("not the password");
    await page.getByRole("button", { name: "Sign in" }).click();
    const alert = page.getByRole("alert");
    await alert.waitFor();
    expect(await alert.innerText()).toMatch(/invalid email or password/i);
    await screenshot(page, "desktop-sign-in-error");

    await page.getByLabel("Password").fill("correct horse battery");
    await page.getByRole("button", { name: "Sign in" }).click();
    await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
    const cookie = (await context.cookies()).find((candidate) => candidate.name === "rb_session");
    expect(cookie?.httpOnly).toBe(true);
    // Thirty days, give or take the test's own run time.
    expect(cookie!.expires * 1000 - Date.now()).toBeGreaterThan(29 * 24 * 3600 * 1000);
    await context.close();
  }, 120_000);

  it("serves the dashboard with strict security headers and index.html for client routes, and API errors stay JSON", async () => {
    for (const path of ["/app", "/app/", "/app/jobs/job_123", "/app/settings/api-keys"]) {
      const response = await fetch(`${system.gatewayUrl}${path}`);
      expect(response.status, path).toBe(200);
      expect(response.headers.get("content-type")).toMatch(/^text\/html/);
      expect(await response.text()).toContain('<div id="root"></div>');
      const csp = response.headers.get("content-security-policy") ?? "";
      expect(csp).toContain("default-src 'self'");
      expect(csp).toContain("frame-ancestors 'none'");
      expect(response.headers.get("x-frame-options")).toBe("DENY");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("referrer-policy")).toBeTruthy();
    }
    const html = await (await fetch(`${system.gatewayUrl}/app/`)).text();
    const script = /src="(\/app\/assets\/[^"]+\.js)"/.exec(html)![1]!;
    const asset = await fetch(`${system.gatewayUrl}${script}`);
    expect(asset.status).toBe(200);
    expect(asset.headers.get("content-type")).toMatch(/javascript/);
    expect(asset.headers.get("cache-control")).toContain("immutable");
    expect((await fetch(`${system.gatewayUrl}/app/assets/missing.js`)).status).toBe(404);
    expect((await fetch(`${system.gatewayUrl}/app/../package.json`)).status).not.toBe(200);
    // No external origins anywhere in the page: everything is bundled.
    expect(html).not.toMatch(/https?:\/\//);
    const root = await fetch(`${system.gatewayUrl}/`, { headers: { accept: "text/html" }, redirect: "manual" });
    expect(root.status).toBe(302);
    expect(root.headers.get("location")).toBe("/app/");
    const jobs = await fetch(`${system.gatewayUrl}/jobs`);
    expect(jobs.status).toBe(401);
    expect(((await jobs.json()) as { error: { code: string } }).error.code).toBe("UNAUTHORIZED");
  });
});
