import { mkdirSync, mkdtempSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain ES module script without types
import { INSTALL_MARKER, installReason, markInstalled } from "./install-plan.mjs";

const at = (path: string, seconds: number) => utimesSync(path, seconds, seconds);

function project(): string {
  const root = mkdtempSync(join(tmpdir(), "rb-install-plan-"));
  writeFileSync(join(root, "package.json"), JSON.stringify({ workspaces: ["libs/*"] }));
  writeFileSync(join(root, "package-lock.json"), "{}");
  mkdirSync(join(root, "libs", "db"), { recursive: true });
  writeFileSync(join(root, "libs", "db", "package.json"), "{}");
  for (const file of ["package.json", "package-lock.json", "libs/db/package.json"]) at(join(root, file), 1_000);
  return root;
}

describe("scripts/install-plan.mjs", () => {
  it("installs when node_modules is missing, and when npm's own lockfile is there but no install finished (a postinstall failed)", () => {
    const root = project();
    expect(installReason(root)).toBe("node_modules is missing");
    mkdirSync(join(root, "node_modules"));
    // What a failed `npm install` leaves: npm's hidden lockfile, newer than every manifest, and no .bin.
    writeFileSync(join(root, "node_modules", ".package-lock.json"), "{}");
    at(join(root, "node_modules", ".package-lock.json"), 2_000);
    expect(installReason(root)).toBe("node_modules was not completed by an install that succeeded");
  });

  it("calls node_modules up to date after a successful install until the lockfile or any workspace's manifest changes", () => {
    const root = project();
    mkdirSync(join(root, "node_modules"));
    markInstalled(root);
    at(join(root, "node_modules", INSTALL_MARKER), 2_000);
    expect(installReason(root)).toBeUndefined();
    at(join(root, "libs", "db", "package.json"), 3_000);
    expect(installReason(root)).toBe("libs/db/package.json changed since the last install");
    markInstalled(root);
    expect(installReason(root)).toBeUndefined();
    at(join(root, "package-lock.json"), Date.now() / 1000 + 60);
    expect(installReason(root)).toBe("package-lock.json changed since the last install");
  });
});
