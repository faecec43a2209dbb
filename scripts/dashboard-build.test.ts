import { mkdirSync, mkdtempSync, utimesSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
// @ts-expect-error: a plain ES module script without types
import { dashboardBuildState } from "./dashboard-build.mjs";

const at = (path: string, seconds: number) => utimesSync(path, seconds, seconds);

describe("scripts/dashboard-build.mjs", () => {
  it("calls a build missing, stale once any source (nested too) is newer than its index.html, else fresh", () => {
    const dir = mkdtempSync(join(tmpdir(), "rb-dashboard-"));
    mkdirSync(join(dir, "src", "pages"), { recursive: true });
    writeFileSync(join(dir, "src", "pages", "Page.tsx"), "");
    writeFileSync(join(dir, "package.json"), "{}");
    for (const path of [join(dir, "src", "pages", "Page.tsx"), join(dir, "src", "pages"), join(dir, "src"), join(dir, "package.json")]) at(path, 1_000);
    expect(dashboardBuildState(dir)).toBe("missing");

    mkdirSync(join(dir, "dist"));
    writeFileSync(join(dir, "dist", "index.html"), "");
    at(join(dir, "dist", "index.html"), 2_000);
    expect(dashboardBuildState(dir)).toBe("fresh");

    at(join(dir, "src", "pages", "Page.tsx"), 3_000);
    expect(dashboardBuildState(dir)).toBe("stale");
  });
});
