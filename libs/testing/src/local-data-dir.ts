/**
 * Where `npm start` keeps the data of the local servers it starts. The checkout's own `.data/` when the OS
 * user PostgreSQL runs as can reach it; otherwise a folder of this checkout's own under a system location, so a
 * clone in a private home directory (/root is mode 700) still starts.
 */
import { execFile } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, realpathSync } from 'node:fs';
import { mkdir, stat, writeFile } from 'node:fs/promises';
import os from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import { lookupUser } from './local-process.js';

const execFileAsync = promisify(execFile);

/** The folder chosen by {@link chooseServerDataDir} and why, for the start-up output. */
export interface ServerDataDir {
  dir: string;
  /** One line saying why this folder, e.g. "the checkout is not reachable by OS user postgres". */
  reason: string;
}

/** Inputs of {@link chooseServerDataDir}; the defaults are the real machine's. */
export interface ServerDataDirOptions {
  /** The checkout (repository root). */
  checkoutDir: string;
  env?: NodeJS.ProcessEnv;
  /** The OS user PostgreSQL runs as: `postgres` when this process is root, else undefined (this user). */
  postgresUser?: { uid: number; gid: number } | undefined;
  /** Parent of the per-checkout folders when the checkout cannot be used. Default: {@link systemDataRoot}. */
  systemRoot?: string;
}

/**
 * Picks the servers' data folder, creating it:
 * 1. `RENDERBUS_SERVER_DATA_DIR` when set;
 * 2. `<checkout>/.data` when the OS user PostgreSQL runs as can search every parent of it;
 * 3. `<systemRoot>/<hash of the checkout's real path>`: the same folder on every run from this checkout, and
 *    another one for another checkout. Holds `checkout.txt` naming the checkout it belongs to.
 */
export async function chooseServerDataDir(options: ServerDataDirOptions): Promise<ServerDataDir> {
  const env = options.env ?? process.env;
  if (env.RENDERBUS_SERVER_DATA_DIR) {
    const dir = path.resolve(env.RENDERBUS_SERVER_DATA_DIR);
    await mkdir(dir, { recursive: true, mode: 0o755 });
    return { dir, reason: 'RENDERBUS_SERVER_DATA_DIR' };
  }
  const checkoutDir = realpathSync(options.checkoutDir);
  const runAs = 'postgresUser' in options ? options.postgresUser : await defaultPostgresUser();
  const inCheckout = path.join(checkoutDir, '.data');
  if (await canSearch(nearestExisting(inCheckout), runAs)) {
    await mkdir(inCheckout, { recursive: true, mode: 0o755 });
    return { dir: inCheckout, reason: 'inside the checkout' };
  }
  const dir = path.join(options.systemRoot ?? systemDataRoot(), checkoutHash(checkoutDir));
  await mkdir(dir, { recursive: true, mode: 0o755 });
  await writeFile(path.join(dir, 'checkout.txt'), `${checkoutDir}\n`);
  const who = runAs === undefined ? 'others' : 'OS user postgres';
  return { dir, reason: `${checkoutDir} is not reachable by ${who} (a parent folder is private)` };
}

/** `/var/lib/renderbus` for root, else `<tmpdir>/renderbus-<uid>` (what an ordinary user can create). */
export function systemDataRoot(): string {
  const uid = process.getuid?.();
  return uid === 0 ? '/var/lib/renderbus' : path.join(os.tmpdir(), `renderbus-${uid ?? 'user'}`);
}

/** 12 hex digits of the SHA-256 of the checkout's real path: stable across runs, distinct across checkouts. */
export function checkoutHash(checkoutDir: string): string {
  return createHash('sha256').update(checkoutDir).digest('hex').slice(0, 12);
}

async function defaultPostgresUser(): Promise<{ uid: number; gid: number } | undefined> {
  return process.getuid?.() === 0 ? lookupUser('postgres') : undefined;
}

function nearestExisting(dir: string): string {
  let current = dir;
  while (!existsSync(current)) current = path.dirname(current);
  return current;
}

/**
 * Whether `runAs` can search `dir` (and so every parent of it). Without a user (not root: PostgreSQL runs as this
 * process's user) this process can; when root but the `postgres` user does not exist yet (apt-get creates it
 * later), every folder on the way must be searchable by others.
 */
async function canSearch(dir: string, runAs: { uid: number; gid: number } | undefined): Promise<boolean> {
  if (process.getuid?.() !== 0) return true;
  if (runAs !== undefined) {
    return execFileAsync('test', ['-x', dir], { ...runAs, cwd: '/' }).then(
      () => true,
      () => false,
    );
  }
  for (let current = dir; ; current = path.dirname(current)) {
    if (((await stat(current)).mode & 0o001) === 0) return false;
    if (path.dirname(current) === current) return true;
  }
}
