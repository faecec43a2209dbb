import { execFile } from "node:child_process";
import { cpSync, existsSync, mkdirSync, readdirSync, readlinkSync, symlinkSync, utimesSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
// @ts-expect-error: a plain ES module script without types
import { INSTALL_MARKER } from "../scripts/install-plan.mjs";
import { repoRoot } from "./helpers.js";

const run = promisify(execFile);

/**
 * Variables of this test run that a user's terminal would not have: the servers and folders of the run's own system,
 * a CLI's target and key, vitest's MODE, NODE_ENV and VITEST_*, and the Node 24 the run's services use (which an
 * ordinary user cannot even execute from root's cache).
 */
const TEST_RUN_VARIABLES = /^(DATABASE_URL|NATS_URL|REDIS_URL|RENDERBUS_SERVER_DATA_DIR|RENDERBUS_BASE_URL|RENDERBUS_API_KEY|OUTPUT_DIR|PUBLIC_URL|RENDERBUS_SERVICE_NODE|MODE|NODE_ENV|VITEST.*|TEST)$/;

/** `env` without the test run's variables: what a copied checkout's commands see in a newcomer's terminal. */
export function withoutTestRunVariables(env: NodeJS.ProcessEnv): NodeJS.ProcessEnv {
  return Object.fromEntries(Object.entries(env).filter(([name]) => !TEST_RUN_VARIABLES.test(name)));
}

/**
 * Copies the working tree (tracked and new files, as they are now, with their modification times) into `target`,
 * and gives it a node_modules of links to this checkout's packages, with the workspace packages linked to the
 * copy's own folders: no install, and the copy runs its own code.
 */
export async function copyCheckout(target: string): Promise<void> {
  mkdirSync(target, { recursive: true });
  await run("sh", ["-c", `git ls-files -z -co --exclude-standard | tar --null --ignore-failed-read -T - -cf - | tar -xpf - -C '${target}'`], {
    cwd: repoRoot,
    maxBuffer: 64 * 1024 * 1024,
  });
  const dashboardBuild = join(repoRoot, "apps", "dashboard", "dist");
  if (existsSync(dashboardBuild)) {
    const copied = join(target, "apps", "dashboard", "dist");
    cpSync(dashboardBuild, copied, { recursive: true, preserveTimestamps: true });
    // tar made the copy's folders now (it was given files, not folders), so scripts/bootstrap.mjs would take the
    // dashboard's sources for changed and rebuild it (5-20 s); the build is this checkout's, as current as it is.
    const now = new Date();
    utimesSync(join(copied, "index.html"), now, now);
  }

  const modules = join(target, "node_modules");
  mkdirSync(modules);
  for (const entry of readdirSync(join(repoRoot, "node_modules"))) {
    // Not the caches tools write into (.vite-temp, .cache): the copy gets its own.
    if (entry === "@renderbus" || (entry.startsWith(".") && entry !== ".bin")) continue;
    symlinkSync(join(repoRoot, "node_modules", entry), join(modules, entry));
  }
  mkdirSync(join(modules, "@renderbus"));
  for (const entry of readdirSync(join(repoRoot, "node_modules", "@renderbus"))) {
    // Relative links (../../libs/bus): inside the copy they point at the copy's workspace folders.
    symlinkSync(readlinkSync(join(repoRoot, "node_modules", "@renderbus", entry)), join(modules, "@renderbus", entry));
  }
  // scripts/bootstrap.mjs installs when a manifest is newer than its marker (scripts/install-plan.mjs); the copy's
  // dependencies are this checkout's, so it counts as installed now. npm's own lockfile goes too (npm reads it).
  for (const marker of [INSTALL_MARKER, ".package-lock.json"]) {
    cpSync(join(repoRoot, "node_modules", marker), join(modules, marker));
    const now = new Date();
    utimesSync(join(modules, marker), now, now);
  }
}

