import { execFile } from "node:child_process";
import { existsSync } from "node:fs";
import { mkdtemp, rm } from "node:fs/promises";
import { availableParallelism, tmpdir } from "node:os";
import path from "node:path";
import { findExecutable } from "@renderbus/config";

/**
 * How ffmpeg and ffprobe run (SECURITY-AUDIT findings 6 and 12). Both parse media anyone may submit, so each run is
 * wrapped here:
 * - `bwrap` (bubblewrap): new user, pid, network, ipc and uts namespaces (no network at all), every capability
 *   dropped, a read-only `/usr` plus the few `/etc` files the dynamic loader and fontconfig need, a private `/tmp`,
 *   and the job's working directory as the only writable and only job-specific path. The output store, other jobs'
 *   directories and the worker's own files are not there to read.
 * - `none`: no namespaces (a development machine without bubblewrap); the limits and the minimal environment below
 *   still apply.
 * In both, the process gets an environment of PATH and a malloc setting only (never the worker's secrets), and
 * resource limits through `prlimit`: address space, CPU seconds, file size and process count.
 */
export type SandboxMode = "bwrap" | "none";

/** Per-process resource limits (setrlimit), applied with util-linux `prlimit`. */
export interface SandboxLimits {
  /** RLIMIT_AS: virtual address space. ffmpeg reserves far more than it touches (thread stacks), so be generous. */
  memoryBytes: number;
  /** RLIMIT_CPU: CPU seconds of all threads together; SIGXCPU, then SIGKILL, past it. */
  cpuSeconds: number;
  /** RLIMIT_FSIZE: the largest file the process may write; SIGXFSZ past it. */
  fileSizeBytes: number;
  /**
   * RLIMIT_NPROC: processes and threads. The kernel counts every process and thread of the worker's OS user on the
   * host (the limit is set before bwrap makes its user namespace, so it caps that namespace's parent count too), and
   * does not enforce it at all for root. So it bounds a fork bomb, not one job's share: keep it well above
   * WORKER_CONCURRENCY x ffmpeg's threads.
   */
  processes: number;
}

/** The process-wide sandbox settings, chosen once at start (see {@link configureSandbox}). */
export interface SandboxSettings {
  mode: SandboxMode;
  /** RLIMIT_AS of every ffmpeg/ffprobe run. */
  memoryBytes: number;
  /** RLIMIT_NPROC of every run. */
  processes: number;
  /** Path of `bwrap` (found on PATH when unset). */
  bwrapPath?: string;
  /** Path of `prlimit`; without one (not Linux) no limits are applied. */
  prlimitPath?: string | null;
}

/** A command ready for `spawn`: the wrapper, its arguments, and the whole environment the process gets. */
export interface WrappedCommand {
  command: string;
  args: string[];
  env: Record<string, string>;
}

/** The whole environment of a sandboxed process. MALLOC_ARENA_MAX keeps glibc's per-thread arenas off RLIMIT_AS. */
export const SANDBOX_ENV: Readonly<Record<string, string>> = { PATH: "/usr/local/bin:/usr/bin:/bin", MALLOC_ARENA_MAX: "2" };

export const DEFAULT_SANDBOX_MEMORY_BYTES = 4 * 1024 ** 3;
export const DEFAULT_SANDBOX_PROCESSES = 512;

/** Finds an executable on PATH (synchronously: used while choosing the defaults). */
export const findOnPath = (name: string): string | undefined => findExecutable(name);

/** The bwrap arguments that make the sandbox around `workDir` (pure). */
export function bwrapArgs(workDir: string, env: Record<string, string>): string[] {
  const args = [
    "--unshare-all", // user, pid, net, ipc, uts, cgroup: no network interface but a private loopback
    "--die-with-parent",
    "--new-session", // no TIOCSTI into the worker's terminal
    "--cap-drop", "ALL",
    "--ro-bind", "/usr", "/usr",
  ];
  // Debian has merged /usr: /bin, /lib, /lib64 and /sbin are links into it.
  for (const link of ["bin", "lib", "lib64", "sbin"]) args.push("--symlink", `usr/${link}`, `/${link}`);
  args.push(
    "--ro-bind", "/etc/ld.so.cache", "/etc/ld.so.cache",
    // Library links of Debian's alternatives system (libblas.so.3 of ffmpeg points there).
    "--ro-bind-try", "/etc/alternatives", "/etc/alternatives",
    // drawtext (font=Sans) and libass (subtitles) find fonts through fontconfig.
    "--ro-bind-try", "/etc/fonts", "/etc/fonts",
    "--ro-bind-try", "/var/cache/fontconfig", "/var/cache/fontconfig",
    "--proc", "/proc",
    "--dev", "/dev",
    "--tmpfs", "/tmp",
    // After the /tmp tmpfs: the job directory usually lives under /tmp.
    "--bind", workDir, workDir,
    "--chdir", workDir,
    "--clearenv",
  );
  for (const [name, value] of Object.entries(env)) args.push("--setenv", name, value);
  return args;
}

/** The prlimit arguments of `limits` (pure); soft and hard limits are equal, so the process cannot raise them. */
export function prlimitArgs(limits: SandboxLimits): string[] {
  const whole = (value: number) => String(Math.max(1, Math.floor(value)));
  return [
    `--as=${whole(limits.memoryBytes)}`,
    `--cpu=${whole(limits.cpuSeconds)}`,
    `--fsize=${whole(limits.fileSizeBytes)}`,
    `--nproc=${whole(limits.processes)}`,
    "--",
  ];
}

/**
 * Wraps `command args` in the sandbox (pure apart from the settings it is given).
 * @param extraEnv variables the tool needs beyond {@link SANDBOX_ENV} (never a secret).
 */
export function sandboxCommand(
  command: string,
  args: string[],
  options: { workDir: string; limits: Omit<SandboxLimits, "memoryBytes" | "processes"> & Partial<SandboxLimits>; settings: SandboxSettings; extraEnv?: Record<string, string> },
): WrappedCommand {
  const { settings } = options;
  const env = { ...SANDBOX_ENV, ...options.extraEnv };
  const limits: SandboxLimits = { memoryBytes: settings.memoryBytes, processes: settings.processes, ...options.limits };
  let wrapped = [command, ...args];
  if (settings.mode === "bwrap") wrapped = [settings.bwrapPath ?? "bwrap", ...bwrapArgs(options.workDir, env), ...wrapped];
  if (settings.prlimitPath) wrapped = [settings.prlimitPath, ...prlimitArgs(limits), ...wrapped];
  return { command: wrapped[0]!, args: wrapped.slice(1), env };
}

/** CPU seconds for a run with a wall-clock deadline: every core busy for the whole time, plus a margin. */
export function cpuSecondsFor(timeoutMs: number): number {
  return Math.ceil((timeoutMs / 1000) * availableParallelism()) + 5;
}

/** The defaults when nothing was configured: bwrap when it is on PATH (tests, scripts), otherwise none. */
function defaultSettings(): SandboxSettings {
  const bwrapPath = findOnPath("bwrap");
  return {
    mode: bwrapPath ? "bwrap" : "none",
    bwrapPath,
    prlimitPath: findOnPath("prlimit") ?? null,
    memoryBytes: DEFAULT_SANDBOX_MEMORY_BYTES,
    processes: DEFAULT_SANDBOX_PROCESSES,
  };
}

let current: SandboxSettings | undefined;

/** The settings every ffmpeg/ffprobe run uses. */
export function sandboxSettings(): SandboxSettings {
  current ??= defaultSettings();
  return current;
}

/** Replaces the process-wide settings (the worker calls it once at start, after {@link checkSandbox}). */
export function configureSandbox(settings: SandboxSettings): void {
  current = settings;
}

/**
 * Runs `true` inside a bwrap sandbox to see that namespaces can be made here (a container's seccomp profile or a
 * kernel setting often forbids them).
 * @returns undefined when it works, else why not.
 */
export async function selfTestBwrap(bwrapPath: string | undefined): Promise<string | undefined> {
  if (!bwrapPath || !existsSync(bwrapPath)) return "bwrap (the bubblewrap package) is not installed";
  const workDir = await mkdtemp(path.join(tmpdir(), "renderbus-sandbox-check-"));
  try {
    const args = [...bwrapArgs(workDir, { ...SANDBOX_ENV }), "true"];
    return await new Promise<string | undefined>((resolve) => {
      execFile(bwrapPath, args, { timeout: 10_000, env: { ...SANDBOX_ENV } }, (error, _stdout, stderr) => {
        resolve(error ? `bwrap cannot make a sandbox here: ${(stderr.trim() || error.message).slice(0, 300)}` : undefined);
      });
    });
  } finally {
    await rm(workDir, { recursive: true, force: true });
  }
}

/** Thrown at start in production when the sandbox the worker must use is not available. */
export class SandboxUnavailableError extends Error {
  override readonly name = "SandboxUnavailableError";
}

/**
 * Chooses the sandbox from the worker's configuration. `WORKER_SANDBOX` unset means bwrap when it works here.
 * In production, bwrap that is missing or fails its self-test stops the start (unless `none` was asked for
 * explicitly); elsewhere a warning is logged and providers run unsandboxed, with limits.
 * @throws SandboxUnavailableError in production when bwrap is wanted and does not work.
 */
export async function chooseSandbox(
  config: { MODE: string; WORKER_SANDBOX?: SandboxMode | undefined; WORKER_SANDBOX_MEMORY_MB: number; WORKER_SANDBOX_MAX_PROCESSES: number },
  log: { warn(object: object, message: string): void; info(object: object, message: string): void },
  /** Where bwrap is (tests pass a missing one); found on PATH by default. */
  bwrapPath: string | undefined = findOnPath("bwrap"),
): Promise<SandboxSettings> {
  const base = {
    memoryBytes: config.WORKER_SANDBOX_MEMORY_MB * 1024 * 1024,
    processes: config.WORKER_SANDBOX_MAX_PROCESSES,
    prlimitPath: findOnPath("prlimit") ?? null,
  };
  if (!base.prlimitPath) log.warn({}, "prlimit (util-linux) not found: ffmpeg runs without memory, CPU, file size and process limits");
  if (config.WORKER_SANDBOX === "none") {
    log.warn({ sandbox: "none" }, "WORKER_SANDBOX=none: ffmpeg and ffprobe run without a sandbox and can read every file the worker can");
    return { ...base, mode: "none" };
  }
  const problem = await selfTestBwrap(bwrapPath);
  if (problem === undefined) {
    log.info({ sandbox: "bwrap", bwrapPath }, "ffmpeg and ffprobe run in a bubblewrap sandbox");
    return { ...base, mode: "bwrap", bwrapPath };
  }
  if (config.MODE === "production") {
    throw new SandboxUnavailableError(
      `${problem}. The worker runs ffmpeg on untrusted media only inside a sandbox in production: install bubblewrap and allow user namespaces (see docs/operations.md), or set WORKER_SANDBOX=none to accept running without one`,
    );
  }
  log.warn({ sandbox: "none", reason: problem }, "no sandbox for ffmpeg and ffprobe (development): they run with limits only");
  return { ...base, mode: "none" };
}
