import { execFile } from "node:child_process";
import { existsSync, readdirSync, readFileSync, statSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { promisify } from "node:util";
import { afterAll, describe, expect, it, vi } from "vitest";
import { createTestDatabase, SERVICES, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";

const run = promisify(execFile);
const repoRoot = resolve(import.meta.dirname, "..");
const bundleOf = (service: string) => join(repoRoot, "services", service, "dist", "service.mjs");

describe("scripts/build-services.mjs", () => {
  let system: RunningSystem | undefined;
  const lines: string[] = [];

  afterAll(async () => {
    await system?.stop();
  });

  it("bundles every service into services/<name>/dist/service.mjs with its source map, workspace code inlined, run by dist/main.mjs", async () => {
    await run(process.execPath, [join(repoRoot, "scripts", "build-services.mjs")], { cwd: repoRoot });
    for (const service of SERVICES) {
      const bundle = readFileSync(bundleOf(service), "utf8");
      expect(existsSync(`${bundleOf(service)}.map`)).toBe(true);
      expect(bundle).toContain("//# sourceMappingURL=service.mjs.map");
      expect(readFileSync(join(repoRoot, "services", service, "dist", "main.mjs"), "utf8")).toContain('await import("./service.mjs")');
      // Workspace packages export TypeScript, which plain node cannot load: none may be left as an import (esbuild
      // writes imports at the start of a line; the gateway's SDK code samples hold the same words inside a string).
      expect(bundle).not.toMatch(/^\s*(import|export)\b[^;'"]*from\s*["']@renderbus\//m);
      expect(bundle).not.toMatch(/\b(import|require)\s*\(\s*["']@renderbus\//);
      // npm packages stay external (resolved from node_modules at run time), never inlined.
      expect(bundle).toMatch(/from\s*["']pino["']/);
    }
  });

  it("leaves an unchanged bundle's files untouched, so services of the same suite starting from them meanwhile read whole files", async () => {
    await run(process.execPath, [join(repoRoot, "scripts", "build-services.mjs"), "gateway"], { cwd: repoRoot });
    const files = ["service.mjs", "service.mjs.map", "main.mjs"].map((file) => join(repoRoot, "services", "gateway", "dist", file));
    const identity = (file: string) => {
      const { ino, mtimeMs } = statSync(file);
      return { ino, mtimeMs };
    };
    const before = files.map(identity);
    await new Promise((resolve) => setTimeout(resolve, 20));
    await run(process.execPath, [join(repoRoot, "scripts", "build-services.mjs"), "gateway"], { cwd: repoRoot });
    // Written in place, a file keeps its inode but not its modification time; renamed over, it keeps neither.
    expect(files.map(identity)).toEqual(before);
    expect(readdirSync(join(repoRoot, "services", "gateway", "dist")).filter((file) => file.endsWith(".partial"))).toEqual([]);
  });

  it("runs every service from its bundle with plain node against real PostgreSQL and NATS", async () => {
    const infra = testInfra();
    const exitListeners = process.listenerCount("exit");
    system = await startSystem({
      repoRoot,
      runtime: "bundle",
      databaseUrl: await createTestDatabase("bundles"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("bundles"),
      env: { MODE: "test", LOG_LEVEL: "info" },
      onLine: (service, line) => lines.push(`${service} ${line}`),
    });
    // startSystem waited for each gRPC health check; the gateway's readiness covers its own dependencies.
    // Without an outputDir of its caller's, the system's output and uploads live in a directory of its own.
    const ownDir = dirname(system.env.OUTPUT_DIR!);
    expect(system.env.UPLOAD_DIR).toBe(join(ownDir, "uploads"));
    expect(existsSync(system.env.OUTPUT_DIR!)).toBe(true);
    const ready = await fetch(`${system.gatewayUrl}/readyz`);
    expect(ready.status).toBe(200);
    expect(process.listenerCount("exit")).toBe(exitListeners + 1);

    // The gateway finds the dashboard relative to its source file; a bundle must resolve that path the same way.
    const dashboardDir = join(repoRoot, "apps", "dashboard", "dist");
    const dashboard = await fetch(`${system.gatewayUrl}/app/`);
    if (existsSync(join(dashboardDir, "index.html"))) {
      expect(dashboard.status).toBe(200);
    } else {
      expect(dashboard.status).toBe(503);
      // Without a build the gateway logs where it looked; its log is buffered until it shuts down.
      await system.stop();
      system = undefined;
      const warning = await vi.waitFor(() => {
        const line = lines.find((candidate) => candidate.startsWith("gateway ") && candidate.includes("dashboard build missing"));
        if (!line) throw new Error("no dashboard warning from the gateway yet");
        return line;
      });
      expect(JSON.parse(warning.slice("gateway ".length)).distDir).toBe(dashboardDir);
    }
    // Its exit hook goes with stop(): a process starting systems one after another (test:chaos --repeat) keeps none.
    await system?.stop();
    system = undefined;
    expect(process.listenerCount("exit")).toBe(exitListeners);
    // ...which stop() removes: a suite that starts dozens of systems leaves nothing in /tmp.
    expect(existsSync(ownDir)).toBe(false);
  }, 120_000);
});
