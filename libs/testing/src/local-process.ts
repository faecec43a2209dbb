/**
 * Process plumbing shared by the local PostgreSQL, NATS and Redis launchers: finding and installing binaries,
 * spawning servers that die with their parent, waiting for readiness, and error reporting.
 */
import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { closeSync, openSync, readFileSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { promisify } from 'node:util';
import { findExecutable as findExecutableIn, pathDirectories } from '@renderbus/config';

const execFileAsync = promisify(execFile);

/** Receives one human-readable progress line. */
export type LogFn = (line: string) => void;

/** A no-op {@link LogFn}. */
export const silent: LogFn = () => undefined;

/**
 * Thrown when a local server or tool cannot be installed, started or reached. The message says what failed and,
 * when there is one, ends with the tail of the server's log file.
 */
export class LocalInfraError extends Error {
  override readonly name = 'LocalInfraError';
}

// ---------------------------------------------------------------------------------------------------------------
// Binaries
// ---------------------------------------------------------------------------------------------------------------

/** Returns the absolute path of the first executable called `name` in `dirs`, then in PATH; undefined when none. */
export function findExecutable(name: string, dirs: readonly string[] = []): string | undefined {
  // /usr/sbin is not on a normal user's PATH, but nats-server lives there on Debian.
  return findExecutableIn(name, [...dirs, ...pathDirectories(), '/usr/sbin', '/usr/local/sbin']);
}

let aptUpdated = false;

/**
 * Installs Debian packages with apt-get (root only). Runs `apt-get update` once per process, and only after a
 * first install attempt failed (a fresh image often has empty package lists).
 */
export async function aptInstall(packages: readonly string[], log: LogFn = silent): Promise<void> {
  const aptGet = findExecutable('apt-get');
  if (process.getuid?.() !== 0 || aptGet === undefined) {
    throw new LocalInfraError(
      `missing ${packages.join(', ')} and cannot install it (needs root and apt-get); ` +
        `install it yourself, e.g. \`sudo apt-get install -y ${packages.join(' ')}\``,
    );
  }
  const install = () =>
    runQuiet(aptGet, ['-o', 'DPkg::Lock::Timeout=300', 'install', '-y', '--no-install-recommends', ...packages]);
  log(`installing ${packages.join(', ')} with apt-get`);
  try {
    await install();
    return;
  } catch (error) {
    if (aptUpdated) throw aptError(packages, error);
  }
  log('apt-get install failed; running apt-get update and retrying');
  aptUpdated = true;
  try {
    await runQuiet(aptGet, ['-o', 'DPkg::Lock::Timeout=300', 'update']);
    await install();
  } catch (error) {
    throw aptError(packages, error);
  }
}

function aptError(packages: readonly string[], error: unknown): LocalInfraError {
  const output = (error as { stderr?: string; stdout?: string }).stderr || (error as { stdout?: string }).stdout || '';
  return new LocalInfraError(
    `apt-get install ${packages.join(' ')} failed: ${(error as Error).message}\n${lastLines(output, 20)}`,
  );
}

async function runQuiet(file: string, args: readonly string[]): Promise<void> {
  await execFileAsync(file, args, {
    env: { ...process.env, DEBIAN_FRONTEND: 'noninteractive' },
    maxBuffer: 64 * 1024 * 1024,
  });
}

/**
 * Returns the path of executable `name`, installing apt package `aptPackage` first when it is missing.
 * `findIn` returns extra directories to search (called again after the install).
 */
export async function ensureExecutable(
  name: string,
  aptPackage: string,
  log: LogFn = silent,
  findIn: () => string[] = () => [],
): Promise<string> {
  const found = findExecutable(name, findIn());
  if (found !== undefined) return found;
  await aptInstall([aptPackage], log);
  const installed = findExecutable(name, findIn());
  if (installed === undefined) {
    throw new LocalInfraError(`apt-get installed ${aptPackage} but ${name} is still not found`);
  }
  return installed;
}

/** Looks up the numeric uid and gid of an OS user; undefined when the user does not exist. */
export async function lookupUser(user: string): Promise<{ uid: number; gid: number } | undefined> {
  try {
    const [uid, gid] = await Promise.all([
      execFileAsync('id', ['-u', user]).then((r) => Number(r.stdout.trim())),
      execFileAsync('id', ['-g', user]).then((r) => Number(r.stdout.trim())),
    ]);
    return { uid, gid };
  } catch {
    return undefined;
  }
}

// ---------------------------------------------------------------------------------------------------------------
// Probes (ports: free-port.ts)
// ---------------------------------------------------------------------------------------------------------------

/** Resolves true while a process with this pid exists (signal 0 probes without killing). */
export function isProcessAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    // EPERM: it exists but belongs to someone else.
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/** Sleeps for `ms` milliseconds. */
export const delay = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

// ---------------------------------------------------------------------------------------------------------------
// Spawned servers
// ---------------------------------------------------------------------------------------------------------------

/** How to spawn one server process. */
export interface ServerSpawnSpec {
  /** Short name for messages, e.g. "postgres". */
  name: string;
  command: string;
  args: readonly string[];
  /** stdout and stderr are appended here. */
  logFile: string;
  cwd: string;
  /** Signal for a clean, quick shutdown (SIGINT is "fast shutdown" for PostgreSQL). */
  stopSignal: NodeJS.Signals;
  /** Run as this OS user instead of the current one. */
  runAs?: { uid: number; gid: number };
  env?: NodeJS.ProcessEnv;
}

/** A server process started by this process; it dies with this process. */
export interface SpawnedServer {
  readonly name: string;
  readonly pid: number;
  readonly logFile: string;
  /** Resolves with the exit code (or signal name) once the process has exited. */
  readonly exited: Promise<number | string>;
  /** True once the process has exited. */
  hasExited(): boolean;
  /** Sends the stop signal, waits up to `timeoutMs`, then SIGKILLs. Safe to call more than once. */
  stop(timeoutMs?: number): Promise<void>;
}

const liveServers = new Set<{ child: ChildProcess; signal: NodeJS.Signals }>();
let exitHookInstalled = false;

function installExitHook(): void {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  // 'exit' handlers must be synchronous: a signal is all we can send. Covers process.exit() and a drained loop;
  // a SIGKILLed parent is covered by setpriv --pdeathsig (see spawnServer).
  process.on('exit', () => {
    for (const { child, signal } of liveServers) {
      try {
        child.kill(signal);
      } catch {
        // already gone
      }
    }
  });
}

let setprivPath: string | null | undefined;

/**
 * Spawns a long-running server with its output appended to `spec.logFile`. The child is in its own process group
 * (a Ctrl-C reaches only the parent, which shuts servers down in order), is killed when this process exits, and
 * when `setpriv` (util-linux) is available also receives its stop signal if this process dies without cleanup.
 */
export function spawnServer(spec: ServerSpawnSpec): SpawnedServer {
  if (setprivPath === undefined) setprivPath = findExecutable('setpriv') ?? null;
  const [command, args] =
    setprivPath === null
      ? [spec.command, spec.args]
      : [setprivPath, ['--pdeathsig', spec.stopSignal.replace(/^SIG/, ''), '--', spec.command, ...spec.args]];

  const logFd = openSync(spec.logFile, 'a');
  let child: ChildProcess;
  try {
    child = spawn(command, args, {
      cwd: spec.cwd,
      env: spec.env ?? process.env,
      stdio: ['ignore', logFd, logFd],
      detached: true,
      ...(spec.runAs ?? {}),
    });
  } finally {
    closeSync(logFd);
  }
  child.unref();
  installExitHook();
  const entry = { child, signal: spec.stopSignal };
  liveServers.add(entry);

  let exitedFlag = false;
  const exited = new Promise<number | string>((resolve) => {
    const finish = (result: number | string) => {
      exitedFlag = true;
      liveServers.delete(entry);
      resolve(result);
    };
    child.once('exit', (code, signal) => finish(code ?? signal ?? 'unknown'));
    child.once('error', (error) => finish(`spawn error: ${error.message}`));
  });

  return {
    name: spec.name,
    pid: child.pid ?? -1,
    logFile: spec.logFile,
    exited,
    hasExited: () => exitedFlag,
    async stop(timeoutMs = 10_000) {
      if (exitedFlag) return;
      // Keep the event loop alive until the child is gone: with only unref'd handles left, Node would exit
      // mid-stop (the exit hook then kills it, but the caller's cleanup after stop() would never run).
      child.ref();
      child.kill(spec.stopSignal);
      const timer = setTimeout(() => child.kill('SIGKILL'), timeoutMs);
      await exited;
      clearTimeout(timer);
    },
  };
}

/**
 * Polls `probe` until it resolves true. Fails with the log tail when `server` exits first or `timeoutMs` passes.
 */
export async function waitUntilReady(
  server: SpawnedServer,
  probe: () => Promise<boolean>,
  timeoutMs: number,
  what: string,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (server.hasExited()) {
      throw new LocalInfraError(
        `${server.name} exited (${await server.exited}) before ${what}\n${logTail(server.logFile)}`,
      );
    }
    if (await probe().catch(() => false)) return;
    if (Date.now() > deadline) {
      throw new LocalInfraError(
        `${server.name} (pid ${server.pid}) did not ${what} within ${timeoutMs / 1000} s\n${logTail(server.logFile)}`,
      );
    }
    await delay(100);
  }
}

/** What a persistent server records in its folder so a later run can find it. */
interface ServerRecord {
  pid: number;
  url: string;
}

/**
 * The server a persistent run recorded in `recordFile`, when its process is still alive and `usable(url)`; undefined
 * when there is none to reuse (start one).
 */
export async function recordedServer(recordFile: string, usable: (url: string) => Promise<boolean>): Promise<ServerRecord | undefined> {
  const record = readJson<ServerRecord>(recordFile);
  return record !== undefined && isProcessAlive(record.pid) && (await usable(record.url)) ? record : undefined;
}

/**
 * Waits until a just-spawned `server` answers `probe` (stopping it when it never does) and, when `recordFile` is
 * given (a persistent run), records it there for recordedServer.
 */
export async function awaitStartedServer(
  server: SpawnedServer,
  { url, probe, what, recordFile }: { url: string; probe: () => Promise<boolean>; what: string; recordFile?: string },
): Promise<void> {
  try {
    await waitUntilReady(server, probe, 30_000, what);
  } catch (error) {
    await server.stop();
    throw error;
  }
  if (recordFile !== undefined) await writeFile(recordFile, JSON.stringify({ pid: server.pid, url } satisfies ServerRecord));
}

/**
 * Calls `attempt` up to `times` times while it fails because the server could not bind its port (taken by someone
 * else between picking it and binding it). Other failures are thrown at once.
 */
export async function retryStart<T>(times: number, attempt: (n: number) => Promise<T>): Promise<T> {
  let lastError: unknown;
  for (let n = 1; n <= times; n += 1) {
    try {
      return await attempt(n);
    } catch (error) {
      lastError = error;
      if (!(error instanceof LocalInfraError) || !/already in use/i.test(error.message)) throw error;
    }
  }
  throw lastError;
}

/** The last `lines` lines of a log file, formatted for an error message. */
export function logTail(file: string, lines = 30): string {
  try {
    return `--- last lines of ${file} ---\n${lastLines(readFileSync(file, 'utf8'), lines)}`;
  } catch {
    return `(no log at ${file})`;
  }
}

function lastLines(text: string, lines: number): string {
  return text.trimEnd().split('\n').slice(-lines).join('\n');
}

/** Reads a JSON file, or undefined when it is missing or unreadable. */
export function readJson<T>(file: string): T | undefined {
  try {
    return JSON.parse(readFileSync(file, 'utf8')) as T;
  } catch {
    return undefined;
  }
}

/** A server this process either started or found running. */
export interface LocalServer {
  /** Connection URL, e.g. `nats://127.0.0.1:4222`. */
  readonly url: string;
  /** True when this process started it (and {@link LocalServer.stop} will stop it). */
  readonly owned: boolean;
  /** Stops the server when owned; a no-op for a server someone else started. */
  stop(): Promise<void>;
}

/** A {@link LocalServer} for a server someone else runs. */
export function externalServer(url: string): LocalServer {
  return { url, owned: false, stop: async () => undefined };
}
