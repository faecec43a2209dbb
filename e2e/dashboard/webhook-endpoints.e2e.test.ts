import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { verifyWebhook } from "../../packages/sdk/src/index.js";
import { admin, repoRoot, startReceiver, waitFor } from "../helpers.js";
import { ensureDashboardBuilt, launchChromium, screenshot, seriousAccessibilityViolations } from "./browser.js";

const LONG = 120_000;

/** Runs in the page, as the dashboard's API client does: session cookie plus the CSRF token from rb_csrf. */
async function apiFromPage<T>(page: Page, method: string, path: string, body?: unknown): Promise<T> {
  return page.evaluate(
    async ({ method, path, body }) => {
      const token = /(?:^|;\s*)rb_csrf=([^;]*)/.exec((globalThis as unknown as { document: { cookie: string } }).document.cookie)?.[1] ?? "";
      const response = await fetch(path, { method, headers: { "content-type": "application/json", "x-csrf-token": token }, ...(body === undefined ? {} : { body: JSON.stringify(body) }) });
      return ((await response.json()) as { data: unknown }).data;
    },
    { method, path, body },
  ) as Promise<T>;
}

describe("webhook endpoints in the dashboard, in a real browser against the running system", () => {
  let system: RunningSystem;
  let browser: Browser;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    const infra = testInfra();
    await ensureDashboardBuilt();
    receiver = await startReceiver();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("hooksui"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("hooksui"),
      env: { MODE: "test", LOG_LEVEL: "info", WEBHOOK_RETRY_SCHEDULE_MS: "200,400,800", WEBHOOK_TIMEOUT_MS: "5000" },
    });
    browser = await launchChromium();
  }, 240_000);

  afterAll(async () => {
    await browser?.close();
    await system?.stop();
    await receiver?.close();
  });

  it(
    "creates an endpoint with an event picker, shows its secret once, disables it with a banner, enables it, rotates the secret and shows the success rate",
    async () => {
      const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, baseURL: system.gatewayUrl });
      context.setDefaultTimeout(60_000);
      const problems: string[] = [];
      const page = await context.newPage();
      page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
      page.on("console", (message) => {
        if (/Content Security Policy|Refused to/i.test(message.text())) problems.push(`csp: ${message.text()}`);
      });

      await page.goto("/app/");
      await page.getByRole("link", { name: "Create an account" }).click();
      await page.getByLabel("Name").fill("Hook Ui");
      await page.getByLabel("Email").fill(`hookui-${Date.now()}@example.com`);
      await page.getByLabel("Password").fill("correct horse battery");
      await page.getByRole("button", { name: "Create account" }).click();
      await page.getByRole("heading", { level: 1, name: "Jobs" }).waitFor();
      const me = await apiFromPage<{ orgId: string }>(page, "GET", "/me");
      await admin(system.env, "org:set-plan", "--org", me.orgId, "--plan", "starter");

      await page.goto("/app/settings/webhooks");
      await waitFor(async () => ((await page.getByRole("heading", { name: "Add an endpoint" }).count()) > 0 ? true : (await page.reload(), undefined)), {
        timeoutMs: 30_000,
        intervalMs: 1000,
        what: "the starter plan to show",
      });
      await page.getByText("No endpoints yet").waitFor();

      // Create: only job.completed, picked from the checkboxes.
      const form = page.getByRole("region", { name: "Add an endpoint" });
      await form.getByLabel("URL").fill(receiver.url);
      await form.getByLabel("Description").fill("completions");
      await form.getByRole("checkbox", { name: "Every job and batch event (*)" }).uncheck();
      await form.getByRole("checkbox", { name: "job.completed", exact: true }).check();
      await form.getByRole("button", { name: "Create endpoint" }).click();
      const secretField = page.getByLabel(/^Signing secret of ep_/);
      await secretField.waitFor();
      const secret = await secretField.inputValue();
      expect(secret).toMatch(/^whsec_[A-Za-z0-9+/]+=*$/);
      await page.getByText("It is shown only once").waitFor();
      await screenshot(page, "endpoints-created");
      expect(await seriousAccessibilityViolations(page)).toEqual([]);

      const endpoints = await apiFromPage<Array<{ id: string; url: string; events: string[]; enabled: boolean }>>(page, "GET", "/webhooks/endpoints");
      expect(endpoints).toEqual([expect.objectContaining({ url: receiver.url, events: ["job.completed"], enabled: true })]);
      const row = page.locator("tr", { hasText: receiver.url });
      await row.getByText("Enabled", { exact: true }).waitFor();

      // Shown once: gone after "stored" and after a reload.
      await page.getByRole("button", { name: "I have stored it" }).click();
      await page.reload();
      await row.waitFor();
      expect(await page.locator("body").innerText()).not.toContain(secret);
      expect(await page.getByLabel(/Signing secret of/).count()).toBe(0);

      // Disable: the row says so and the banner appears; enable again: both go away.
      await page.getByRole("button", { name: `Disable ${receiver.url}` }).click();
      await row.getByText("Disabled").waitFor();
      await page.getByRole("alert").filter({ hasText: "1 webhook endpoint is disabled" }).waitFor();
      await screenshot(page, "endpoints-disabled-banner");
      expect(await seriousAccessibilityViolations(page)).toEqual([]);
      expect((await apiFromPage<Array<{ enabled: boolean }>>(page, "GET", "/webhooks/endpoints"))[0]?.enabled).toBe(false);
      await page.getByRole("button", { name: `Enable ${receiver.url}` }).click();
      await row.getByText("Enabled", { exact: true }).waitFor();
      await waitFor(async () => ((await page.getByText("webhook endpoint is disabled").count()) === 0 ? true : undefined), { timeoutMs: 30_000, what: "the banner to go" });

      // Rotate: a new secret, shown once, and the old one kept for the grace period.
      await page.getByRole("button", { name: `Rotate secret of ${receiver.url}` }).click();
      const rotatedField = page.getByLabel(/^New signing secret of ep_/);
      await rotatedField.waitFor();
      const rotated = await rotatedField.inputValue();
      expect(rotated).toMatch(/^whsec_/);
      expect(rotated).not.toBe(secret);
      const afterRotation = await apiFromPage<Array<{ previousSecretExpiresAt: number | null }>>(page, "GET", "/webhooks/endpoints");
      expect(afterRotation[0]?.previousSecretExpiresAt).toBeGreaterThan(Date.now());
      expect(JSON.stringify(afterRotation)).not.toContain(rotated);

      // A test event to this endpoint, signed with its new secret.
      await page.getByRole("button", { name: `Send test to ${receiver.url}` }).click();
      await page.getByText(`Test event delivered to ${receiver.url}: HTTP 200`).waitFor({ timeout: LONG });
      const test = receiver.received.find((hook) => hook.headers["x-renderbus-event"] === "webhook.test")!;
      expect(verifyWebhook(test.rawBody, test.headers, rotated)).toBe(true);

      // A completed job reaches the endpoint; its success rate shows it (the test event counts as well).
      await apiFromPage(page, "POST", "/jobs", { type: "qr.generate", params: { content: "endpoint ui" } });
      await waitFor(() => receiver.received.find((hook) => hook.headers["x-renderbus-event"] === "job.completed"), { timeoutMs: LONG, what: "job.completed at the receiver" });
      await waitFor(
        async () => {
          await page.getByRole("button", { name: "Reload endpoints" }).click();
          return (await row.getByText("100% of 2").count()) > 0 || undefined;
        },
        { timeoutMs: LONG, intervalMs: 2000, what: "the success rate" },
      );

      // The delivery log through the API: request headers without signatures, the body, status and latency.
      const received = receiver.received.find((hook) => hook.headers["x-renderbus-event"] === "job.completed")!;
      const log = await apiFromPage<Array<{ id: string; event: string; body: string; attemptLog: Array<Record<string, unknown>> }>>(page, "GET", "/webhooks/deliveries?event=job.completed");
      const delivery = log.find((entry) => entry.id === received.headers["x-renderbus-delivery"])!;
      expect(delivery.body).toBe(received.rawBody.toString("utf8"));
      expect(delivery.attemptLog[0]).toMatchObject({
        attempt: 1,
        responseStatus: 200,
        latencyMs: expect.any(Number),
        requestHeaders: expect.objectContaining({ "X-Renderbus-Event": "job.completed", "webhook-id": delivery.id, "content-type": "application/json" }),
        // A loopback receiver is a private address: like its body, its response headers are not kept (docs/webhooks.md).
        responseHeaders: {},
      });
      const logText = JSON.stringify(log);
      expect(received.headers["webhook-signature"]).toMatch(/^v1,/);
      expect(logText.toLowerCase()).not.toContain("signature\":");
      expect(logText).not.toContain(String(received.headers["webhook-signature"]).slice(3));
      expect(logText).not.toContain(String(received.headers["x-renderbus-signature"]).slice(7));

      // And in the dashboard's delivery view.
      const recent = page.getByRole("region", { name: "Recent deliveries" });
      await page.getByRole("button", { name: "Refresh", exact: true }).click();
      const deliveryRow = recent.locator(`tr[data-delivery-id="${delivery.id}"]`);
      await deliveryRow.getByText("1 attempt").click();
      await deliveryRow.getByText("Request body").click();
      await deliveryRow.getByText("Request and response").click();
      await deliveryRow.getByText("Request headers (signatures left out)").waitFor();
      const shownLog = await deliveryRow.innerText();
      expect(shownLog).toContain("X-Renderbus-Delivery");
      expect(shownLog).toContain(delivery.id);
      expect(shownLog).toContain('"event":"job.completed"');
      expect(shownLog.toLowerCase()).not.toContain("signature:");
      expect(shownLog).not.toContain(String(received.headers["webhook-signature"]).slice(3));
      await screenshot(page, "endpoints-attempt-log");

      // Recover a window: nothing failed, so nothing to send again.
      const recover = page.getByRole("region", { name: "Recover failed deliveries" });
      await recover.getByLabel("From").fill("2026-01-01T00:00");
      await recover.getByRole("button", { name: "Recover deliveries" }).click();
      await recover.getByText("0 deliveries are being sent again.").waitFor();
      await screenshot(page, "endpoints");
      expect(await seriousAccessibilityViolations(page)).toEqual([]);
      expect(problems).toEqual([]);
      await context.close();
    },
    600_000,
  );
});
