import { execFile } from "node:child_process";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { CONFIG_EXIT_CODE, FATAL_CLEANUP_TIMEOUT_MS, FATAL_EXIT_CODE } from "./run-service.js";

const fixture = path.join(import.meta.dirname, "run-service.fixture.ts");
const repoRoot = path.resolve(import.meta.dirname, "../../..");

function runFixture(mode: string): Promise<{ code: number | null; stdout: string; stderr: string; elapsedMs: number }> {
  const started = Date.now();
  return new Promise((resolve) => {
    execFile(process.execPath, ["--import", "tsx", fixture, mode], { cwd: repoRoot, timeout: 20_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? ((error as { code?: number }).code ?? null) : 0, stdout, stderr, elapsedMs: Date.now() - started });
    });
  });
}

function fatalLine(stdout: string): Record<string, unknown> | undefined {
  return stdout
    .split("\n")
    .filter((line) => line.startsWith("{"))
    .map((line) => JSON.parse(line) as Record<string, unknown>)
    .find((entry) => entry.level === 60 || entry.level === "fatal");
}

describe("runService: an uncaught error is fatal but reported first", () => {
  it("logs an uncaught exception with the job id, lets the service clean up, and exits non-zero", async () => {
    const { code, stdout } = await runFixture("throw");
    expect(code).toBe(FATAL_EXIT_CODE);
    expect(fatalLine(stdout)).toMatchObject({ msg: "uncaught error; the process exits", jobId: "job_fixture", origin: "uncaughtException", err: { message: "thrown in a job" } });
    expect(stdout).toContain("cleanup for job_fixture: thrown in a job");
  });

  it("treats an unhandled rejection the same way", async () => {
    const { code, stdout } = await runFixture("reject");
    expect(code).toBe(FATAL_EXIT_CODE);
    expect(fatalLine(stdout)).toMatchObject({ jobId: "job_fixture", origin: "unhandledRejection", err: { message: "rejected in a job" } });
    expect(stdout).toContain("cleanup for job_fixture: rejected in a job");
  });

  it("exits after the cleanup deadline when the cleanup never settles", async () => {
    const { code, stdout, elapsedMs } = await runFixture("hang");
    expect(code).toBe(FATAL_EXIT_CODE);
    expect(fatalLine(stdout)).toMatchObject({ jobId: "job_fixture" });
    expect(elapsedMs).toBeGreaterThanOrEqual(FATAL_CLEANUP_TIMEOUT_MS);
    // Well short of the 20 s the fixture may run (a process that never exits), with room for a loaded machine: the
    // fixture alone takes 2-5 s to start under the full suite.
    expect(elapsedMs).toBeLessThan(FATAL_CLEANUP_TIMEOUT_MS + 12_000);
  }, 20_000);
});

describe("runService: a stop that never finishes", () => {
  it("exits non-zero after SHUTDOWN_TIMEOUT_MS, saying so, instead of staying up forever", async () => {
    const { code, stdout, elapsedMs } = await runFixture("stop-hangs");
    expect(code).toBe(1);
    const lines = stdout.split("\n").filter((line) => line.startsWith("{")).map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(lines.map((line) => line.msg)).toEqual(expect.arrayContaining(["shutting down", "shutdown did not finish in time (SHUTDOWN_TIMEOUT_MS); exiting"]));
    expect(lines.find((line) => line.timeoutMs !== undefined)).toMatchObject({ timeoutMs: 300 });
    expect(elapsedMs).toBeLessThan(15_000);
  }, 20_000);
});

describe("runService: a configuration refused while starting", () => {
  it("exits with EX_CONFIG and the variables at fault, as the config loader does, not as a crash", async () => {
    const { code, stdout, stderr } = await runFixture("config-error");
    expect(code).toBe(CONFIG_EXIT_CODE);
    expect(stderr).toContain("fixture: Invalid configuration: RPC_TRANSPORT: production needs tls or mesh");
    expect(fatalLine(stdout)).toBeUndefined();
  }, 20_000);
});
