/**
 * PostgreSQL, NATS (JetStream) and Redis for `npm start` and for tests: taken from the environment when configured,
 * otherwise found on the default local ports (persistent mode) or spawned from the OS packages.
 */
import { chmod, mkdir, mkdtemp, readdir, rm, stat, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { canQueryPostgres, DEFAULT_POSTGRES_URL, startLocalPostgres } from './local-postgres.js';
import { DEFAULT_NATS_URL, isLocalNatsUsable, startLocalNats } from './local-nats.js';
import {
  ensureExecutable,
  externalServer,
  isProcessAlive,
  LocalInfraError,
  readJson,
  silent,
  type LocalServer,
  type LogFn,
} from './local-process.js';
import { canPingRedis, DEFAULT_REDIS_URL, startLocalRedis } from './local-redis.js';

export { LocalInfraError, type LocalServer } from './local-process.js';

/** Connection URLs of the infrastructure Renderbus needs, and how to release it. */
export interface LocalInfra {
  /** e.g. `postgres://postgres@127.0.0.1:5433/postgres` */
  databaseUrl: string;
  /** e.g. `nats://127.0.0.1:4223`; the server has JetStream enabled unless it came from `NATS_URL`. */
  natsUrl: string;
  /** e.g. `redis://127.0.0.1:6380` */
  redisUrl: string;
  /**
   * Stops the servers this call started (never ones taken from env vars or found running) and, in test mode,
   * deletes their data. Safe to call more than once.
   */
  stop(): Promise<void>;
}

/** Options for {@link ensureLocalInfra}. */
export interface LocalInfraOptions {
  /** Directory for data dirs, sockets, logs. */
  dataDir: string;
  /**
   * true for `npm start` (keep data across runs, reuse a server already started from this dataDir / on the
   * default ports); false for tests (fresh temp servers on random free ports, fsync off, removed on stop).
   */
  persistent: boolean;
  /** Receives one progress line per step (which server is used or started, installs). Default: silent. */
  log?: (line: string) => void;
  /** Ignore `DATABASE_URL` / `NATS_URL` / `REDIS_URL` and always use local servers (tests of this module). */
  ignoreEnv?: boolean;
  /** More settings for a PostgreSQL server this starts (`name=value`); a server it reuses or is given keeps its own. */
  postgresSettings?: readonly string[];
}

/** Where and how a server of one kind is started; `settings` go to PostgreSQL only. */
type StartOptions = { dir: string; persistent: boolean; log: LogFn; settings?: readonly string[] };

/** One piece of infrastructure: its env var, default local URL, health probe and launcher. */
interface ServerKind {
  name: string;
  envVar: string;
  defaultUrl: string;
  /** Names the local port persistent mode looks for a running server on, instead of the default one. */
  portVar: string;
  isUsable(url: string): Promise<boolean>;
  start(options: StartOptions): Promise<LocalServer>;
}

const POSTGRES: ServerKind = {
  name: 'postgres',
  envVar: 'DATABASE_URL',
  portVar: 'RENDERBUS_POSTGRES_PORT',
  defaultUrl: DEFAULT_POSTGRES_URL,
  isUsable: canQueryPostgres,
  start: startLocalPostgres,
};

const NATS: ServerKind = {
  name: 'nats',
  envVar: 'NATS_URL',
  portVar: 'RENDERBUS_NATS_PORT',
  defaultUrl: DEFAULT_NATS_URL,
  // Only a server that demands the dev credentials: an open NATS on the port would run the services unauthenticated.
  isUsable: isLocalNatsUsable,
  start: startLocalNats,
};

const REDIS: ServerKind = {
  name: 'redis',
  envVar: 'REDIS_URL',
  portVar: 'RENDERBUS_REDIS_PORT',
  defaultUrl: DEFAULT_REDIS_URL,
  isUsable: canPingRedis,
  start: startLocalRedis,
};

/**
 * Provides PostgreSQL, NATS with JetStream and Redis. For each one, in order:
 * 1. its env var (`DATABASE_URL`, `NATS_URL`, `REDIS_URL`) when set, unless `ignoreEnv`; never started;
 * 2. persistent mode only: the default local port (or `RENDERBUS_POSTGRES_PORT` / `RENDERBUS_NATS_PORT` /
 *    `RENDERBUS_REDIS_PORT`, unless `ignoreEnv`) when a usable server answers there;
 * 3. persistent mode only: a server still running from `dataDir` (started by another `npm start`);
 * 4. a new server spawned from the OS package (apt-get installed when missing and running as root), data in
 *    `dataDir/<name>` (persistent) or a fresh temporary directory under `dataDir` (tests).
 * Spawned servers die with this process. The three are brought up concurrently.
 * @throws {LocalInfraError} when a server cannot be installed, started or reached; the message ends with the tail
 *   of its log.
 */
export async function ensureLocalInfra(options: LocalInfraOptions): Promise<LocalInfra> {
  const log = options.log ?? silent;
  const env = options.ignoreEnv ? {} : process.env;
  const baseDir = options.persistent ? await prepareDataDir(options.dataDir) : await createRunDir(options.dataDir);
  const removeRunDir = async () => {
    if (!options.persistent) await rm(baseDir, { recursive: true, force: true });
  };

  const results = await Promise.allSettled(
    [POSTGRES, NATS, REDIS].map((kind) =>
      provideServer(kind, env[kind.envVar], localUrl(kind, env[kind.portVar]), {
        dir: path.join(baseDir, kind.name),
        persistent: options.persistent,
        log,
        ...(kind === POSTGRES && options.postgresSettings ? { settings: options.postgresSettings } : {}),
      }),
    ),
  );
  const servers = results.flatMap((result) => (result.status === 'fulfilled' ? [result.value] : []));
  const failures = results.flatMap((result) => (result.status === 'rejected' ? [result.reason as unknown] : []));
  if (failures.length > 0) {
    await Promise.allSettled(servers.map((server) => server.stop()));
    await removeRunDir().catch(() => undefined);
    throw failures.length === 1 ? failures[0] : combinedError(failures);
  }

  const [postgres, nats, redis] = servers as [LocalServer, LocalServer, LocalServer];
  let stopping: Promise<void> | undefined;
  return {
    databaseUrl: postgres.url,
    natsUrl: nats.url,
    redisUrl: redis.url,
    stop: () => (stopping ??= stopAll(servers, removeRunDir)),
  };
}

/** The kind's default URL with its port replaced by `port` (a `RENDERBUS_*_PORT` value) when given. */
function localUrl(kind: ServerKind, port: string | undefined): string {
  if (!port) return kind.defaultUrl;
  if (!/^\d+$/.test(port) || Number(port) < 1 || Number(port) > 65_535) {
    throw new LocalInfraError(`${kind.portVar} must be a port number, got "${port}"`);
  }
  const url = new URL(kind.defaultUrl);
  url.port = port;
  return url.toString().replace(/\/$/, '');
}

async function provideServer(
  kind: ServerKind,
  envUrl: string | undefined,
  probeUrl: string,
  options: StartOptions,
): Promise<LocalServer> {
  if (envUrl) {
    options.log(`${kind.name}: using ${kind.envVar}`);
    return externalServer(envUrl);
  }
  if (options.persistent) {
    if (await kind.isUsable(probeUrl)) {
      options.log(`${kind.name}: using the server at ${withoutPassword(probeUrl)}`);
      return externalServer(probeUrl);
    }
    options.log(`${kind.name}: nothing usable at ${withoutPassword(probeUrl)}; using a local server in ${options.dir}`);
  }
  return kind.start(options);
}

/** A URL as it may be printed: a password in it (the dev NATS superuser's) becomes `***`. */
function withoutPassword(url: string): string {
  return url.replace(/:\/\/([^:@/]+):[^@/]+@/, '://$1:***@');
}

async function stopAll(servers: LocalServer[], removeRunDir: () => Promise<void>): Promise<void> {
  const results = await Promise.allSettled(servers.map((server) => server.stop()));
  await removeRunDir();
  const failures = results.flatMap((result) => (result.status === 'rejected' ? [result.reason as unknown] : []));
  if (failures.length > 0) throw combinedError(failures);
}

function combinedError(errors: unknown[]): LocalInfraError {
  return new LocalInfraError(errors.map((error) => (error as Error).message ?? String(error)).join('\n\n'));
}

async function prepareDataDir(dataDir: string): Promise<string> {
  const dir = path.resolve(dataDir);
  await mkdir(dir, { recursive: true, mode: 0o755 });
  // The postgres OS user must pass through dataDir; a caller's mkdtemp() dir is 0700. Search-only (o+x) does not
  // let others list it.
  const { mode, uid } = await stat(dir);
  if (uid === process.getuid?.() && (mode & 0o001) === 0) await chmod(dir, (mode & 0o7777) | 0o001);
  return dir;
}

/** Marks which process owns a test run directory, so later runs can delete directories left by crashed ones. */
interface RunOwner {
  pid: number;
}

/** A fresh `dataDir/run-XXXXXX` for one test-mode call, after sweeping runs whose owner process is gone. */
async function createRunDir(dataDir: string): Promise<string> {
  const parent = await prepareDataDir(dataDir);
  await sweepAbandonedRuns(parent);
  const dir = await mkdtemp(path.join(parent, 'run-'));
  // mkdtemp makes it 0700; the postgres OS user must be able to reach its data dir inside.
  await chmod(dir, 0o755);
  await writeFile(path.join(dir, 'owner.json'), JSON.stringify({ pid: process.pid } satisfies RunOwner));
  return dir;
}

async function sweepAbandonedRuns(parent: string): Promise<void> {
  for (const entry of await readdir(parent).catch(() => [])) {
    if (!entry.startsWith('run-')) continue;
    const dir = path.join(parent, entry);
    const owner = readJson<RunOwner>(path.join(dir, 'owner.json'));
    if (owner !== undefined && !isProcessAlive(owner.pid)) {
      await rm(dir, { recursive: true, force: true }).catch(() => undefined);
    }
  }
}

/**
 * Makes sure `ffmpeg` and `ffprobe` are on PATH, installing the Debian `ffmpeg` package with apt-get when one is
 * missing and this process is root; `bwrap` (package `bubblewrap`, the worker's sandbox) likewise, when it can.
 * @throws {LocalInfraError} when they are missing and cannot be installed.
 */
export async function ensureFfmpeg(log: (line: string) => void = silent): Promise<void> {
  await ensureExecutable('ffmpeg', 'ffmpeg', log);
  await ensureExecutable('ffprobe', 'ffmpeg', log);
  // The worker runs ffmpeg inside bubblewrap (services/worker/src/sandbox); without it a development worker warns and
  // runs ffmpeg unsandboxed, so a failed install is reported, not fatal.
  await ensureExecutable('bwrap', 'bubblewrap', log).catch((error: unknown) => log(`bubblewrap: ${(error as Error).message}`));
}
