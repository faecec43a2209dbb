import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { join } from "node:path";
import { promisify } from "node:util";
import { chromium, type Browser, type Page } from "playwright-core";
import { aptInstall } from "../../libs/testing/src/local-process.js";
// @ts-expect-error: a plain ES module script without types
import { dashboardBuildState } from "../../scripts/dashboard-build.mjs";
import { repoRoot } from "../helpers.js";

const CHROMIUM = "/usr/bin/chromium";
const require = createRequire(import.meta.url);

/** Debian's Chromium, headless (playwright's own browser download does not work on these machines). */
export async function launchChromium(): Promise<Browser> {
  if (!existsSync(CHROMIUM)) await aptInstall(["chromium"]);
  return chromium.launch({
    executablePath: CHROMIUM,
    args: ["--headless", "--no-sandbox", "--disable-gpu", "--disable-background-networking", "--disable-quic", "--no-first-run", "--disable-component-update", "--disable-sync"],
  });
}

/**
 * The dashboard is built by `npm start` / `npm test` (scripts/bootstrap.mjs); a bare `vitest run` of a browser test
 * builds it here when it is missing or older than its sources, so an edit is what the browser tests.
 */
export async function ensureDashboardBuilt(): Promise<void> {
  if ((dashboardBuildState(join(repoRoot, "apps", "dashboard")) as string) === "fresh") return;
  await promisify(execFile)("npm", ["run", "build", "-w", "@renderbus/dashboard"], { cwd: repoRoot });
}

export const artifactsDir = join(repoRoot, "test-artifacts", "dashboard");

/** Saves a full-page screenshot as test-artifacts/dashboard/<name>.png. */
export async function screenshot(page: Page, name: string): Promise<void> {
  mkdirSync(artifactsDir, { recursive: true });
  await page.screenshot({ path: join(artifactsDir, `${name}.png`), fullPage: true });
}

const axeSource = readFileSync(require.resolve("axe-core/axe.min.js"), "utf8");

export interface AxeViolation {
  id: string;
  impact: string | null;
  help: string;
  nodes: { target: string[]; failureSummary?: string }[];
}

/** Runs axe-core on the page as it is now and returns the serious and critical violations, readable in a failure. */
export async function seriousAccessibilityViolations(page: Page): Promise<string[]> {
  const hasAxe = await page.evaluate(() => typeof (globalThis as { axe?: unknown }).axe !== "undefined");
  // The dashboard's CSP (script-src 'self') refuses inline <script> tags, which is what addScriptTag({content})
  // inserts; a DevTools evaluation is outside the page's CSP, so axe is loaded that way instead.
  if (!hasAxe) await page.evaluate(axeSource);
  const violations = await page.evaluate(async () => {
    // Runs in the page; axe's context defaults to the whole document.
    const axe = (globalThis as unknown as { axe: { run: (options: object) => Promise<{ violations: unknown[] }> } }).axe;
    const results = await axe.run({ resultTypes: ["violations"] });
    return results.violations as AxeViolation[];
  });
  return violations
    .filter((violation) => violation.impact === "serious" || violation.impact === "critical")
    .map((violation) => `${violation.impact} ${violation.id}: ${violation.help} at ${violation.nodes.map((node) => node.target.join(" ")).join(", ")}`);
}
