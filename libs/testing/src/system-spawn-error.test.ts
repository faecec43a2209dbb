import { chmodSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import { startSystem } from "./system.js";

const repoRoot = join(import.meta.dirname, "..", "..", "..");
// Nothing listens here: the start fails before any service would connect.
const unreachable = { databaseUrl: "postgres://127.0.0.1:1/none", natsUrl: "nats://127.0.0.1:1", redisUrl: "redis://127.0.0.1:1" };

describe("startSystem with a node binary that cannot be executed", () => {
  const dirs: string[] = [];
  afterEach(() => {
    vi.unstubAllEnvs();
    for (const dir of dirs.splice(0)) rmSync(dir, { recursive: true, force: true });
  });

  it("fails the start naming the service, the binary and the reason when the binary does not exist", async () => {
    vi.stubEnv("RENDERBUS_SERVICE_NODE", "/nonexistent/renderbus/node");
    await expect(startSystem({ repoRoot, ...unreachable, runtime: "source" })).rejects.toThrow(/could not be started \(\/nonexistent\/renderbus\/node\): .*ENOENT/);
  });

  it("fails the start the same way when the binary is not executable (EACCES)", async () => {
    const dir = mkdtempSync(join(tmpdir(), "rb-node-"));
    dirs.push(dir);
    const binary = join(dir, "node");
    writeFileSync(binary, "not a program");
    chmodSync(binary, 0o600);
    vi.stubEnv("RENDERBUS_SERVICE_NODE", binary);
    await expect(startSystem({ repoRoot, ...unreachable, runtime: "source" })).rejects.toThrow(/could not be started .*EACCES/);
  });
});
