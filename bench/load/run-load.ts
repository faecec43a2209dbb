import { spawn } from "node:child_process";
import { join } from "node:path";
import type { LoadResult, LoadSpec } from "./load-spec.js";

const repoRoot = join(import.meta.dirname, "..", "..");

/**
 * Runs one load in a child process (`tsx bench/load/child.ts`) and returns its result. The child is killed when it
 * overruns its own bound by `graceMs`, so a stuck run can never hang the suite.
 */
export function runLoad(spec: LoadSpec, { graceMs = 60_000 }: { graceMs?: number } = {}): Promise<LoadResult> {
  const boundMs = ("durationSeconds" in spec ? spec.durationSeconds * 1000 : 60_000) + graceMs;
  return new Promise((resolve, reject) => {
    const child = spawn(join(repoRoot, "node_modules", ".bin", "tsx"), [join(repoRoot, "bench", "load", "child.ts"), JSON.stringify(spec)], {
      cwd: repoRoot,
      stdio: ["ignore", "pipe", "pipe"],
    });
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
