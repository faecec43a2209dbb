import { mkdirSync, mkdtempSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import Fastify from "fastify";
import { describe, expect, it } from "vitest";
import type { GatewayDeps } from "../deps.js";
import { registerDashboard } from "./dashboard.routes.js";

function fakeDeps(warnings: unknown[]): GatewayDeps {
  const logger = { warn: (...args: unknown[]) => warnings.push(args), info: () => undefined, error: () => undefined };
  return { config: { PUBLIC_URL: "http://127.0.0.1:3000" }, logger } as unknown as GatewayDeps;
}

function builtDashboard(): string {
  const dir = mkdtempSync(join(tmpdir(), "rb-dash-"));
  mkdirSync(join(dir, "assets"));
  writeFileSync(join(dir, "index.html"), '<!doctype html><div id="root"></div>');
  writeFileSync(join(dir, "assets", "index-abc123.js"), "console.log(1)");
  writeFileSync(join(dir, "favicon.svg"), "<svg/>");
  return dir;
}

describe("the gateway's dashboard files", () => {
  it("serves index.html for the app and its client routes, with the security headers", async () => {
    const app = Fastify();
    await registerDashboard(app, fakeDeps([]), { distDir: builtDashboard() });
    for (const url of ["/app", "/app/", "/app/jobs/job_1", "/app/settings/api-keys"]) {
      const response = await app.inject({ url });
      expect(response.statusCode, url).toBe(200);
      expect(response.body).toContain('<div id="root">');
      expect(response.headers["cache-control"]).toBe("no-cache");
      expect(response.headers["x-frame-options"]).toBe("DENY");
      expect(response.headers["content-security-policy"]).toContain("frame-ancestors 'none'");
    }
    await app.close();
  });

  it("sends a browser at the bare gateway URL to the dashboard and leaves API clients their JSON 404", async () => {
    const app = Fastify();
    app.setNotFoundHandler((_request, reply) => reply.status(404).send({ error: { code: "NOT_FOUND", message: "No route GET /" } }));
    await registerDashboard(app, fakeDeps([]), { distDir: builtDashboard() });
    const browser = await app.inject({ url: "/", headers: { accept: "text/html,application/xhtml+xml" } });
    expect(browser.statusCode).toBe(302);
    expect(browser.headers.location).toBe("/app/");
    const client = await app.inject({ url: "/", headers: { accept: "application/json" } });
    expect(client.statusCode).toBe(404);
    expect(client.json()).toMatchObject({ error: { code: "NOT_FOUND" } });
    await app.close();
  });

  it("caches hashed assets for good and answers 404 for missing files or paths outside the build", async () => {
    const app = Fastify();
    await registerDashboard(app, fakeDeps([]), { distDir: builtDashboard() });
    const asset = await app.inject({ url: "/app/assets/index-abc123.js" });
    expect(asset.statusCode).toBe(200);
    expect(asset.headers["cache-control"]).toContain("immutable");
    expect((await app.inject({ url: "/app/favicon.svg" })).statusCode).toBe(200);
    expect((await app.inject({ url: "/app/assets/missing.js" })).statusCode).toBe(404);
    expect((await app.inject({ url: "/app/..%2f..%2f..%2fpackage.json" })).statusCode).toBe(404);
    // A path without an extension is a client route: it gets the app, never a file from outside the build.
    expect((await app.inject({ url: "/app/..%2f..%2fetc%2fpasswd" })).body).toContain('<div id="root">');
    expect((await app.inject({ url: "/app/.env" })).statusCode).toBe(404);
    await app.close();
  });

  it("starts without a build, logs a warning, and answers 503 with the build command", async () => {
    const warnings: unknown[] = [];
    const app = Fastify();
    await registerDashboard(app, fakeDeps(warnings), { distDir: join(tmpdir(), "rb-no-such-dashboard") });
    const response = await app.inject({ url: "/app/jobs" });
    expect(response.statusCode).toBe(503);
    expect(response.body).toContain("npm run build -w @renderbus/dashboard");
    expect(response.headers["x-frame-options"]).toBe("DENY");
    expect(warnings).toHaveLength(1);
    await app.close();
  });
});
