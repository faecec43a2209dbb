/**
 * A local PostgreSQL server from the OS packages (Debian: /usr/lib/postgresql/<major>/bin), run as the `postgres`
 * OS user when this process is root, because PostgreSQL refuses to run as root.
 */
import { execFile } from 'node:child_process';
import { existsSync, readdirSync, readFileSync } from 'node:fs';
import { appendFile, chown, mkdir } from 'node:fs/promises';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import {
  ensureExecutable,
  isProcessAlive,
  LocalInfraError,
  logTail,
  lookupUser,
  retryStart,
  spawnServer,
  waitUntilReady,
  type LocalServer,
  type LogFn,
} from './local-process.js';
import { findFreePortFrom, getFreePort } from './free-port.js';

const execFileAsync = promisify(execFile);

/** The URL of a stock local PostgreSQL (Debian package defaults with trust auth on loopback). */
export const DEFAULT_POSTGRES_URL = 'postgres://postgres@127.0.0.1:5432/postgres';

/** First port tried for a persistent local server, next to the default 5432. */
const PERSISTENT_PORT_FROM = 5433;

/** Settings that trade durability for speed; test servers are thrown away anyway. */
const THROWAWAY_SETTINGS = ['fsync=off', 'synchronous_commit=off', 'full_page_writes=off'];

/** Where and how to run a local PostgreSQL. */
export interface LocalPostgresOptions {
  /** Directory for the cluster (`data/`), its unix socket (`socket/`) and `postgres.log`. */
  dir: string;
  /** Keep the cluster and reuse a running server from `dir`; otherwise fast throwaway settings. */
  persistent: boolean;
  log: LogFn;
  /** More `-c name=value` settings for a server this starts (e.g. the bench's `--pg-statements`). */
  settings?: readonly string[];
}

/** Resolves true when `url` accepts a connection and answers `select 1`. */
export async function canQueryPostgres(url: string): Promise<boolean> {
  const client = new pg.Client({ connectionString: url, connectionTimeoutMillis: 2000 });
  client.on('error', () => undefined);
  try {
    await client.connect();
    await client.query('select 1');
    return true;
  } catch {
    return false;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/**
 * Starts PostgreSQL with its cluster in `options.dir` (running initdb first when there is no cluster yet). In
 * persistent mode a server already running from that cluster is reused instead.
 */
export async function startLocalPostgres(options: LocalPostgresOptions): Promise<LocalServer> {
  const binaries = await ensurePostgresBinaries(options.log);
  const runAs = await postgresUser();
  const layout = await prepareLayout(options.dir, runAs);

  if (options.persistent) {
    const running = await reuseRunningCluster(layout.dataDir, options.log);
    if (running !== undefined) return running;
  }
  if (!existsSync(path.join(layout.dataDir, 'PG_VERSION'))) {
    await initCluster(binaries.initdb, layout, runAs, options);
  }
  assertSameMajor(layout.dataDir, binaries.major);

  return retryStart(3, async () => {
    const port = options.persistent ? await findFreePortFrom(PERSISTENT_PORT_FROM) : await getFreePort();
    return runPostgres(binaries.postgres, layout, port, runAs, options);
  });
}

interface PostgresBinaries {
  postgres: string;
  initdb: string;
  /** Major version taken from the Debian directory name, when known. */
  major?: string;
}

/** Finds postgres + initdb, preferring the newest /usr/lib/postgresql/<major>/bin; installs postgresql if none. */
async function ensurePostgresBinaries(log: LogFn): Promise<PostgresBinaries> {
  const postgres = await ensureExecutable('postgres', 'postgresql', log, debianBinDirs);
  const initdb = await ensureExecutable('initdb', 'postgresql', log, debianBinDirs);
  const major = /\/usr\/lib\/postgresql\/([^/]+)\/bin\//.exec(postgres)?.[1];
  return major === undefined ? { postgres, initdb } : { postgres, initdb, major };
}

function debianBinDirs(): string[] {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return [];
  return readdirSync(root)
    .filter((entry) => /^\d+(\.\d+)?$/.test(entry))
    .sort((a, b) => Number(b) - Number(a))
    .map((major) => path.join(root, major, 'bin'));
}

type RunAs = { uid: number; gid: number } | undefined;

/** The `postgres` OS user when we are root (PostgreSQL refuses root), else undefined (run as ourselves). */
async function postgresUser(): Promise<RunAs> {
  if (process.getuid?.() !== 0) return undefined;
  const user = await lookupUser('postgres');
  if (user === undefined) {
    throw new LocalInfraError(
      'running as root, PostgreSQL needs an unprivileged OS user "postgres", which does not exist ' +
        '(apt-get install postgresql creates it); or set DATABASE_URL',
    );
  }
  return user;
}

interface Layout {
  dir: string;
  dataDir: string;
  socketDir: string;
  logFile: string;
}

async function prepareLayout(dir: string, runAs: RunAs): Promise<Layout> {
  const layout: Layout = {
    dir,
    dataDir: path.join(dir, 'data'),
    socketDir: path.join(dir, 'socket'),
    logFile: path.join(dir, 'postgres.log'),
  };
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await mkdir(layout.dataDir, { recursive: true, mode: 0o700 });
  await mkdir(layout.socketDir, { recursive: true, mode: 0o755 });
  if (runAs !== undefined) {
    await chown(layout.dataDir, runAs.uid, runAs.gid);
    await chown(layout.socketDir, runAs.uid, runAs.gid);
    await assertReachable(layout.dataDir, runAs);
  }
  return layout;
}

/** The postgres user needs search (x) permission on every parent of the data dir, e.g. not under /root. */
async function assertReachable(dataDir: string, runAs: { uid: number; gid: number }): Promise<void> {
  try {
    await execFileAsync('test', ['-w', dataDir], { ...runAs, cwd: '/' });
  } catch {
    throw new LocalInfraError(
      `OS user postgres cannot write ${dataDir}: every parent directory must be searchable by others (o+x). ` +
        'Pick a dataDir outside private home directories (npm start: RENDERBUS_SERVER_DATA_DIR), or set DATABASE_URL',
    );
  }
}

/** In persistent mode: a postmaster still running from this cluster is reused rather than started twice. */
async function reuseRunningCluster(dataDir: string, log: LogFn): Promise<LocalServer | undefined> {
  const postmaster = readPostmasterPid(dataDir);
  if (postmaster === undefined || !isProcessAlive(postmaster.pid)) return undefined;
  const url = postgresUrl(postmaster.port);
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    if (await canQueryPostgres(url)) {
      log(`postgres: reusing server pid ${postmaster.pid} from ${dataDir} at ${url}`);
      return { url, owned: false, stop: async () => undefined };
    }
    await new Promise((resolve) => setTimeout(resolve, 200));
  }
  throw new LocalInfraError(
    `a PostgreSQL (pid ${postmaster.pid}) runs from ${dataDir} but does not answer on ${url}\n` +
      logTail(path.join(path.dirname(dataDir), 'postgres.log')),
  );
}

/** Reads pid and port from postmaster.pid (line 1 and line 4), if present. */
function readPostmasterPid(dataDir: string): { pid: number; port: number } | undefined {
  try {
    const lines = readFileSync(path.join(dataDir, 'postmaster.pid'), 'utf8').split('\n');
    const pid = Number(lines[0]);
    const port = Number(lines[3]);
    return Number.isInteger(pid) && Number.isInteger(port) && pid > 0 ? { pid, port } : undefined;
  } catch {
    return undefined;
  }
}

async function initCluster(initdb: string, layout: Layout, runAs: RunAs, options: LocalPostgresOptions) {
  options.log(`postgres: initdb ${layout.dataDir}`);
  const args = ['-D', layout.dataDir, '-U', 'postgres', '-A', 'trust', '-E', 'UTF8', '--locale=C', '--no-instructions'];
  if (!options.persistent) args.push('--no-sync');
  try {
    const { stdout, stderr } = await execFileAsync(initdb, args, {
      ...(runAs ?? {}),
      cwd: layout.dir,
      env: { ...process.env, LC_ALL: 'C', LANG: 'C' },
    });
    await appendFile(layout.logFile, stdout + stderr);
  } catch (error) {
    const { stdout = '', stderr = '' } = error as { stdout?: string; stderr?: string };
    await appendFile(layout.logFile, stdout + stderr).catch(() => undefined);
    throw new LocalInfraError(`initdb failed: ${(error as Error).message}\n${logTail(layout.logFile)}`);
  }
}

function assertSameMajor(dataDir: string, major: string | undefined): void {
  const clusterMajor = readFileSync(path.join(dataDir, 'PG_VERSION'), 'utf8').trim();
  if (major !== undefined && clusterMajor !== major) {
    throw new LocalInfraError(
      `${dataDir} holds a PostgreSQL ${clusterMajor} cluster but PostgreSQL ${major} is installed; ` +
        `remove the directory (its data is lost) or install PostgreSQL ${clusterMajor}`,
    );
  }
}

async function runPostgres(
  postgres: string,
  layout: Layout,
  port: number,
  runAs: RunAs,
  options: LocalPostgresOptions,
): Promise<LocalServer> {
  // A unix socket path is limited to ~107 bytes; without one, clients still connect over TCP.
  const socketDir = layout.socketDir.length > 80 ? '' : layout.socketDir;
  const settings = ['listen_addresses=127.0.0.1', `unix_socket_directories=${socketDir}`, 'max_connections=300'];
  if (!options.persistent) settings.push(...THROWAWAY_SETTINGS);
  settings.push(...(options.settings ?? []));
  const server = spawnServer({
    name: 'postgres',
    command: postgres,
    args: ['-D', layout.dataDir, '-p', String(port), ...settings.flatMap((setting) => ['-c', setting])],
    logFile: layout.logFile,
    cwd: layout.dir,
    stopSignal: 'SIGINT', // "fast shutdown": disconnects clients instead of waiting for them
    ...(runAs === undefined ? {} : { runAs }),
    env: { ...process.env, LC_ALL: 'C', LANG: 'C' },
  });
  const url = postgresUrl(port);
  try {
    await waitUntilReady(server, () => canQueryPostgres(url), 60_000, `accepting connections on ${url}`);
  } catch (error) {
    await server.stop();
    throw error;
  }
  options.log(`postgres: started pid ${server.pid} at ${url} (data ${layout.dataDir})`);
  return { url, owned: true, stop: () => server.stop(15_000) };
}

function postgresUrl(port: number): string {
  return `postgres://postgres@127.0.0.1:${port}/postgres`;
}
