import { spawn } from "node:child_process";
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { build } from "esbuild";
import type { LoadResult, LoadSpec } from "./load-spec.js";

let childScript: Promise<string> | undefined;

/**
 * bench/load/child.ts bundled once per process into one file for plain `node`. Run through tsx, every load paid ~1.5 s
 * of start-up (a 0.1 s load took 2.8 s against 1.3 s bundled, on an idle machine), and a run starts dozens of loads.
 * Everything is bundled (npm packages too) so the file runs from a temporary folder; `require` is provided for the
 * CommonJS packages among them.
 */
export function loadChildScript(): Promise<string> {
  childScript ??= (async () => {
    const dir = mkdtempSync(join(tmpdir(), "rb-load-child-"));
    process.once("exit", () => rmSync(dir, { recursive: true, force: true }));
    const outfile = join(dir, "child.mjs");
    await build({
      entryPoints: [join(import.meta.dirname, "child.ts")],
      outfile,
      bundle: true,
      platform: "node",
      format: "esm",
      target: "node20",
      banner: { js: "import { createRequire as __loadChildRequire } from 'node:module'; const require = __loadChildRequire(import.meta.url);" },
      logLevel: "warning",
    });
    return outfile;
  })();
  return childScript;
}

/**
 * Runs one load in a child process (bench/load/child.ts, bundled) and returns its result. The child is killed when it
 * overruns its own bound by `graceMs`, so a stuck run can never hang the suite.
 */
export async function runLoad(spec: LoadSpec, { graceMs = 60_000 }: { graceMs?: number } = {}): Promise<LoadResult> {
  const script = await loadChildScript();
  const boundMs = ("durationSeconds" in spec ? spec.durationSeconds * 1000 : 60_000) + graceMs;
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [script, JSON.stringify(spec)], { stdio: ["ignore", "pipe", "pipe"] });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk: Buffer) => (stdout += chunk.toString()));
    child.stderr.on("data", (chunk: Buffer) => (stderr += chunk.toString()));
    const timer = setTimeout(() => child.kill("SIGKILL"), boundMs);
    child.on("exit", (code, signal) => {
      clearTimeout(timer);
      const line = stdout.split("\n").find((l) => l.startsWith("RESULT "));
      if (code === 0 && line) resolve(JSON.parse(line.slice("RESULT ".length)) as LoadResult);
      else reject(new Error(`load ${spec.kind} failed (code ${code}, signal ${signal}): ${stderr.slice(-2000)}`));
    });
  });
}
