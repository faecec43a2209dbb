import { mkdirSync, mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Browser, Page } from "playwright-core";
import type { FastifyInstance } from "fastify";
import { loadPlans } from "@renderbus/plans";
import { createLogger, createMetricsRegistry } from "@renderbus/telemetry";
import { createLocalUploadStore } from "@renderbus/uploads";
import { buildApp } from "../../services/gateway/src/app.js";
import { gatewayConfigSchema } from "../../services/gateway/src/config.js";
import type { GatewayDeps } from "../../services/gateway/src/deps.js";
import { launchChromium } from "../dashboard/browser.js";
import { repoRoot } from "../helpers.js";

/**
 * The API reference at /docs in real Chromium. The page needs only the gateway (it renders /openapi.json, which the
 * gateway builds from its route table), so the gateway runs in process with inert service clients, on a random port.
 */
async function startGateway(): Promise<{ app: FastifyInstance; url: string }> {
  const deps = {
    // The default PUBLIC_URL (port 3000) only names the document's server; the page loads everything from 'self'.
    config: gatewayConfigSchema.parse({}),
    logger: createLogger({ service: "api-reference-e2e", level: "silent" }),
    plans: loadPlans(undefined),
    metrics: createMetricsRegistry("api-reference-e2e"),
    jobEvents: { close: () => undefined },
    // A tus server is built over the upload store at start-up; no upload request reaches it here.
    uploads: createLocalUploadStore({ directory: mkdtempSync(join(tmpdir(), "rb-api-reference-uploads-")), retentionMs: 3_600_000 }),
    // Limiters register their Lua scripts and SSE streams subscribe to revocations at start-up; nothing runs here.
    redis: { defineCommand: () => undefined },
    bus: { listen: () => () => undefined },
  } as unknown as GatewayDeps;
  const app = await buildApp(deps);
  await app.listen({ host: "127.0.0.1", port: 0 });
  return { app, url: `http://127.0.0.1:${(app.server.address() as AddressInfo).port}` };
}

/** The fields of a SecurityPolicyViolationEvent the test reports. */
interface CspViolation {
  violatedDirective: string;
  blockedURI: string;
  sourceFile: string;
  lineNumber: number;
  columnNumber: number;
}

const LOCAL_HOSTS = new Set(["127.0.0.1", "localhost", "[::1]"]);

describe("the API reference at /docs in a real browser", () => {
  let gateway: Awaited<ReturnType<typeof startGateway>>;
  let browser: Browser;
  let page: Page;
  const foreignRequests: string[] = [];
  const problems: string[] = [];

  beforeAll(async () => {
    [gateway, browser] = await Promise.all([startGateway(), launchChromium()]);
    const context = await browser.newContext({ viewport: { width: 1400, height: 1000 }, baseURL: gateway.url });
    // Two cores shared with other test runs: a 4 MB bundle can take a while to parse.
    context.setDefaultTimeout(60_000);
    // Every request that would leave this machine (a CDN, fonts, telemetry) is recorded and refused.
    await context.route("**/*", (route) => {
      const url = new URL(route.request().url());
      if (/^(https?|wss?):$/.test(url.protocol) && !LOCAL_HOSTS.has(url.hostname)) {
        foreignRequests.push(url.href);
        return route.abort();
      }
      return route.continue();
    });
    // CSP violations as the page itself sees them (the init script runs through DevTools, outside the page's CSP).
    await context.addInitScript(() => {
      const seen: string[] = [];
      (globalThis as unknown as { cspViolations: string[] }).cspViolations = seen;
      // The root tsconfig has no DOM types: the bits of the document and of the event this reads.
      const page = globalThis as unknown as { document: { addEventListener(type: string, listener: (event: CspViolation) => void): void } };
      page.document.addEventListener("securitypolicyviolation", (event) => seen.push(`${event.violatedDirective} ${event.blockedURI} at ${event.sourceFile}:${event.lineNumber}:${event.columnNumber}`));
    });
    page = await context.newPage();
    page.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
    page.on("console", (message) => {
      if (/Content Security Policy|Refused to/i.test(message.text())) problems.push(`csp: ${message.text()}`);
    });
  }, 180_000);

  afterAll(async () => {
    await browser?.close();
    await gateway?.app.close();
  });

  it("shows POST /jobs with its body fields, a response example and curl and SDK samples, from this origin only, without CSP violations", async () => {
    await page.goto("/docs#tag/jobs/POST/jobs");
    const operation = page.locator('[id$="tag/jobs/POST/jobs"]').first();
    await operation.getByRole("heading", { name: "Submit a job" }).waitFor();

    // The request body's fields with their descriptions, from the zod schema that validates the route.
    const text = await operation.innerText();
    for (const field of ["type", "inputs", "params", "metadata"]) expect(text).toMatch(new RegExp(`^${field}$`, "m"));
    expect(text).toContain("Job type, see GET /job-types");
    expect(text).toContain("Idempotency-Key");
    // The 201 response example, built from the Job schema's examples, and the error statuses.
    expect(text).toContain('"id": "job_01JD3Z8X9K2M4N6P8R0T2V4W6Y"');
    expect(text).toContain('"status": "waiting"');
    for (const status of ["201", "400", "401", "402", "409", "422", "429"]) expect(text).toMatch(new RegExp(`^${status}\\b`, "m"));
    // The curl sample is shown first; the SDK sample is the other choice of the same menu.
    expect(text).toContain("curl -X POST");
    await operation.getByRole("button", { name: /^curl/ }).click();
    await page.getByRole("option", { name: "SDK (@renderbus/sdk)" }).click();
    await expect.poll(() => operation.innerText()).toContain("await client.jobs.submit(");

    // How to authenticate is in the introduction, above the operations.
    expect(await page.locator("body").innerText()).toContain("Authorization: Bearer rb_...");

    mkdirSync(join(repoRoot, "test-artifacts"), { recursive: true });
    await operation.scrollIntoViewIfNeeded();
    await page.screenshot({ path: join(repoRoot, "test-artifacts", "api-reference.png") });

    expect(foreignRequests).toEqual([]);
    expect(await page.evaluate(() => (globalThis as unknown as { cspViolations: string[] }).cspViolations)).toEqual([]);
    expect(problems).toEqual([]);
  }, 180_000);

  it("shows every operation with its request body, a response body example and a code sample", async () => {
    const document = (await (await fetch(`${gateway.url}/openapi.json`)).json()) as {
      paths: Record<string, Record<string, { summary: string; tags: string[]; requestBody?: unknown; responses: Record<string, { content?: Record<string, unknown> }> }>>;
    };
    const missing: string[] = [];
    for (const [path, operations] of Object.entries(document.paths)) {
      for (const [method, operation] of Object.entries(operations)) {
        const id = `tag/${operation.tags[0]}/${method.toUpperCase()}${path}`;
        await page.goto(`/docs#${id}`);
        const section = page.locator(`[id$="${id}"]`).first();
        await section.getByRole("heading", { name: operation.summary }).first().waitFor();
        // The code samples render once the operation is on screen. The client chosen in the first test (the SDK) stays
        // chosen, so an operation shows its SDK sample, or its curl one when it has none (downloads, /mcp).
        await section.scrollIntoViewIfNeeded();
        const sample = /await client\.|of client\.|curl /;
        await section.getByText(sample).first().waitFor({ timeout: 20_000 }).catch(() => undefined);
        const text = await section.innerText();
        const name = `${method.toUpperCase()} ${path}`;
        if (!sample.test(text)) missing.push(`${name}: no code sample`);
        if (operation.requestBody && !/Body/.test(text)) missing.push(`${name}: no request body`);
        const success = Object.entries(operation.responses).find(([status]) => status.startsWith("2"))!;
        // A JSON success body is shown as an example built from its schema: `{"data": ...}`.
        if (success[1].content?.["application/json"] && path !== "/mcp" && !text.includes('"data"')) missing.push(`${name}: no response example`);
        if (!text.includes(success[0])) missing.push(`${name}: no ${success[0]} response`);
      }
    }
    expect(missing).toEqual([]);
    expect(foreignRequests).toEqual([]);
    expect(problems).toEqual([]);
  }, 600_000);

  it("shows a webhook's payload schema and its signature header", async () => {
    await page.goto("/docs#tag/webhooks/webhook/POST/job.completed");
    const webhook = page.locator('[id$="tag/webhooks/webhook/POST/job.completed"]').first();
    await webhook.getByRole("heading", { name: "A job completed" }).waitFor();
    const text = await webhook.innerText();
    expect(text).toContain("X-Renderbus-Signature");
    expect(text).toContain("sha256=");
    for (const field of ["event", "jobId", "result", "cost", "timing"]) expect(text).toMatch(new RegExp(`^${field}$`, "m"));
    expect(foreignRequests).toEqual([]);
    expect(problems).toEqual([]);
  }, 120_000);

  it("opens the built-in request client without reaching another host or breaking the CSP", async () => {
    await page.goto("/docs#tag/jobs/GET/jobs");
    const operation = page.locator('[id$="tag/jobs/GET/jobs"]').first();
    await operation.getByRole("button", { name: "Test Request" }).click();
    await page.getByRole("dialog").first().waitFor();
    // The client loads parts of itself lazily; give any such request (or a font, or telemetry) time to show up.
    await page.waitForTimeout(1_000);
    expect(foreignRequests).toEqual([]);
    expect(await page.evaluate(() => (globalThis as unknown as { cspViolations: string[] }).cspViolations)).toEqual([]);
    expect(problems).toEqual([]);
  }, 120_000);
});
