import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer, type Server } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  chooseSandbox,
  findOnPath,
  sandboxCommand,
  sandboxSettings,
  SandboxUnavailableError,
  selfTestBwrap,
  type SandboxLimits,
  type SandboxSettings,
} from "./sandbox.js";

const bwrap: SandboxSettings = { ...sandboxSettings(), mode: "bwrap" };
const unsandboxed: SandboxSettings = { ...sandboxSettings(), mode: "none" };
const limits: Omit<SandboxLimits, "memoryBytes" | "processes"> = { cpuSeconds: 30, fileSizeBytes: 10 * 1024 * 1024 };
const silentLog = { warn: () => undefined, info: () => undefined };

let workDir: string;
let elsewhere: string;

/** Runs `command args` wrapped as the worker wraps ffmpeg; resolves with the exit code and output. */
function runWrapped(settings: SandboxSettings, command: string, args: string[], overrides: Partial<SandboxLimits> = {}) {
  const wrapped = sandboxCommand(command, args, { workDir, limits: { ...limits, ...overrides }, settings });
  return new Promise<{ code: number; stdout: string; stderr: string }>((resolve) => {
    execFile(wrapped.command, wrapped.args, { env: wrapped.env, cwd: workDir, timeout: 60_000, maxBuffer: 4 * 1024 * 1024 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) || 1 : 0, stdout, stderr });
    });
  });
}

beforeAll(async () => {
  expect(findOnPath("bwrap"), "bubblewrap must be installed for these tests (apt-get install bubblewrap)").toBeDefined();
  workDir = await mkdtemp(path.join(tmpdir(), "rb-sandbox-job-"));
  elsewhere = await mkdtemp(path.join(tmpdir(), "rb-sandbox-elsewhere-"));
  await writeFile(path.join(workDir, "input.txt"), "the job's own input\n");
  await writeFile(path.join(elsewhere, "other-tenant.txt"), "another job's output\n");
});
afterAll(async () => {
  await Promise.all([workDir, elsewhere].map((dir) => rm(dir, { recursive: true, force: true })));
});

describe("the media sandbox (bubblewrap)", () => {
  it("passes its self-test on this machine, and a missing bwrap stops a production worker with the reason", async () => {
    expect(await selfTestBwrap(findOnPath("bwrap"))).toBeUndefined();
    expect(await selfTestBwrap("/nonexistent/bwrap")).toMatch(/not installed/);
    const production = { MODE: "production", WORKER_SANDBOX_MEMORY_MB: 4096, WORKER_SANDBOX_MAX_PROCESSES: 512 };
    await expect(chooseSandbox(production, silentLog, "/nonexistent/bwrap")).rejects.toThrow(SandboxUnavailableError);
    await expect(chooseSandbox(production, silentLog, "/nonexistent/bwrap")).rejects.toThrow(/bubblewrap.*WORKER_SANDBOX=none/s);
    expect(await chooseSandbox({ ...production, MODE: "development" }, silentLog, "/nonexistent/bwrap")).toMatchObject({ mode: "none" });
    expect(await chooseSandbox(production, silentLog)).toMatchObject({ mode: "bwrap", memoryBytes: 4096 * 1024 * 1024 });
  });

  it("gives the process PATH, PWD and a malloc setting only: no secret of the worker's environment", async () => {
    process.env.OUTPUT_SIGNING_SECRET = "worker-secret-that-must-not-leak";
    try {
      for (const settings of [bwrap, unsandboxed]) {
        const { code, stdout } = await runWrapped(settings, "cat", ["/proc/self/environ"]);
        expect(code).toBe(0);
        const variables = stdout.split("\0").filter(Boolean).map((entry) => entry.split("=")[0]).sort();
        // bwrap sets PWD (the job's directory) for --chdir.
        expect(variables.filter((name) => name !== "PWD")).toEqual(["MALLOC_ARENA_MAX", "PATH"]);
        expect(stdout).not.toContain("worker-secret-that-must-not-leak");
      }
    } finally {
      delete process.env.OUTPUT_SIGNING_SECRET;
    }
  });

  it("has no network: a TCP server on the host's loopback is unreachable (reachable without the sandbox)", async () => {
    let connections = 0;
    const server: Server = createServer((socket) => {
      connections += 1;
      socket.end();
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const port = (server.address() as { port: number }).port;
    try {
      const connect = ["-c", `exec 3<>/dev/tcp/127.0.0.1/${port} && echo connected`];
      const inside = await runWrapped(bwrap, "bash", connect);
      expect(inside.code).not.toBe(0);
      expect(inside.stdout).not.toContain("connected");
      expect(connections).toBe(0);
      const outside = await runWrapped(unsandboxed, "bash", connect);
      expect(outside.stdout).toContain("connected");
      expect(connections).toBe(1);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("shows the job's directory and nothing else of the worker's: other directories, /etc/passwd, the worker's files", async () => {
    const own = await runWrapped(bwrap, "cat", [path.join(workDir, "input.txt")]);
    expect(own).toMatchObject({ code: 0, stdout: "the job's own input\n" });
    for (const outside of [path.join(elsewhere, "other-tenant.txt"), "/etc/passwd", "/etc/hostname", path.join(process.cwd(), "package.json")]) {
      const read = await runWrapped(bwrap, "cat", [outside]);
      expect(read.code, outside).not.toBe(0);
      expect(read.stderr).toMatch(/No such file or directory/);
    }
    // The control: without the sandbox the same file is there to read.
    expect((await runWrapped(unsandboxed, "cat", [path.join(elsewhere, "other-tenant.txt")])).stdout).toBe("another job's output\n");
    // Writes land in the job's directory only; the rest is read-only or gone when the sandbox ends.
    const write = await runWrapped(bwrap, "bash", ["-c", `echo out > ${workDir}/output.txt && (echo x > /usr/x 2>/dev/null || echo refused)`]);
    expect(write.stdout).toBe("refused\n");
    expect(await readFile(path.join(workDir, "output.txt"), "utf8")).toBe("out\n");
  });

  it("stops a process that allocates past the memory limit", async () => {
    // perl (in every Debian system) builds a string of the given size at run time.
    const allocate = (bytes: number) => ["-e", "my $x = 'a' x shift; print length($x), qq(\\n);", String(bytes)];
    const limit = { memoryBytes: 256 * 1024 * 1024 };
    const hog = await runWrapped(bwrap, "perl", allocate(1024 ** 3), limit);
    expect(hog.code).not.toBe(0);
    expect(hog.stderr).toMatch(/Out of memory/);
    expect(await runWrapped(bwrap, "perl", allocate(10 * 1024 ** 2), limit)).toMatchObject({ code: 0, stdout: "10485760\n" });
  });

  it("stops a process that writes a file past the file size limit", async () => {
    const big = await runWrapped(bwrap, "bash", ["-c", `head -c 2000000 /dev/zero > ${workDir}/big.bin`], { fileSizeBytes: 1_000_000 });
    expect(big.code).not.toBe(0);
  });
});
