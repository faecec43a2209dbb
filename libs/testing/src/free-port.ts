/**
 * Ports for servers that tests and `npm start` start after picking their ports (a service learns its peers' ports
 * from its environment, so they are picked before anything binds).
 *
 * Asking the OS for port 0 and closing it again races twice. The port comes from the ephemeral range, so any outgoing
 * connection on the machine (the suite opens thousands) may take it before our server binds it. And another process
 * (a second vitest worker, or the `npm start` a test runs) may be handed the same one. Both happened in CI: a gateway's
 * metrics port was in use when it bound it.
 *
 * So ports come from below the ephemeral range, where the OS never assigns one on its own, and each is reserved for
 * the process that took it by a file named after it in a directory every process on the machine shares (created
 * with O_EXCL, so one taker wins). A reservation ends with its process: its files go on exit, and a file whose
 * process is gone is taken over.
 */
import { chmodSync, closeSync, constants, fstatSync, linkSync, lstatSync, mkdirSync, openSync, readdirSync, readFileSync, renameSync, rmSync, statSync, unlinkSync, writeSync } from 'node:fs';
import { createServer } from 'node:net';
import { join } from 'node:path';
import { isProcessAlive, LocalInfraError } from './local-process.js';

/** Where reservations live: one directory for every user, like /tmp itself (sticky, world-writable). */
export const DEFAULT_PORT_REGISTRY_DIR = '/tmp/renderbus-ports';

/** The lowest port handed out: above the fixed ones (3000, 4222, 5432, 6379, 9464 and the ranges npm start scans). */
export const FIRST_HANDED_OUT_PORT = 10_000;

/** Fewer ports than this below the ephemeral range, and ports come from the OS as before. */
const MIN_RANGE_SIZE = 2_000;

export interface PortRange {
  first: number;
  /** Exclusive. */
  end: number;
}

export interface PortRegistryOptions {
  dir?: string;
  range?: PortRange;
}

/**
 * Ports one `take` tries before it falls back to an OS-picked one: from a random start in a range of ~22,000 nearly
 * always the first is free, so this many taken in a row means a full or flooded directory, not bad luck.
 */
export const MAX_PORTS_TRIED = 1_000;

/** Registries holding reservations; one exit listener for all of them, installed on import (callers count theirs). */
const holding = new Set<PortRegistry>();
process.once('exit', () => {
  for (const registry of holding) registry.releaseAll();
});

/** Hands out ports reserved across processes; see the module comment. */
export class PortRegistry {
  readonly dir: string;
  readonly range: PortRange | undefined;
  private readonly mine = new Set<number>();
  private usable: boolean | undefined;

  constructor(options: PortRegistryOptions = {}) {
    this.dir = options.dir ?? DEFAULT_PORT_REGISTRY_DIR;
    this.range = options.range ?? rangeBelowEphemeral();
  }

  /** A port free on 127.0.0.1 a moment ago that no other process using the same directory holds. */
  async take(): Promise<number> {
    const range = this.range;
    if (range === undefined || !this.registryUsable()) return this.osPicked();
    const size = range.end - range.first;
    const start = Math.floor(Math.random() * size);
    for (let step = 0; step < Math.min(size, MAX_PORTS_TRIED); step += 1) {
      const port = range.first + ((start + step) % size);
      if (this.mine.has(port) || !this.reserve(port)) continue;
      if (await canBind(port)) return port;
      // Someone outside the registry is on it (a fixed-port server): keep the reservation, so no one tries it again.
    }
    // The range is full, or the shared directory was filled with reservations of living processes (any local user can
    // write there): an OS-picked port may race as before the registry, but the run goes on rather than failing.
    return this.osPicked();
  }

  /**
   * The first port of `[first, first + count)` that can be bound and that no other process holds (npm start's local
   * servers keep a port from their range across restarts). This process's own reservations count as free: it may
   * start a server again on the port it had.
   */
  async takeFirstFree(first: number, count: number): Promise<number | undefined> {
    const registered = this.registryUsable();
    for (let port = first; port < first + count; port += 1) {
      const reserved = this.mine.has(port) || !registered || this.reserve(port);
      if (!reserved) continue;
      if (await canBind(port)) return port;
      if (registered) this.release(port);
    }
    return undefined;
  }

  /** Removes this process's reservations (its servers are gone or going). */
  releaseAll(): void {
    for (const port of this.mine) this.release(port);
  }

  private release(port: number): void {
    this.mine.delete(port);
    rmSync(this.fileOf(port), { force: true });
  }

  private reserve(port: number): boolean {
    const file = this.fileOf(port);
    for (let attempt = 0; attempt < 2; attempt += 1) {
      try {
        const fd = openSync(file, 'wx', 0o644);
        try {
          writeSync(fd, String(process.pid));
        } finally {
          closeSync(fd);
        }
        this.mine.add(port);
        holding.add(this);
        return true;
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST' || !removeIfAbandoned(file)) return false;
      }
    }
    return false;
  }

  /**
   * The directory is shared with every local user, and this often runs as root: it is opened up (sticky,
   * world-writable) only right after this process made it, and one that is not a real directory (a symlink another
   * user left there) turns the registry off rather than being followed.
   */
  private registryUsable(): boolean {
    if (this.usable !== undefined) return this.usable;
    try {
      try {
        mkdirSync(this.dir, 0o700);
        chmodSync(this.dir, 0o1777);
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      }
      if (!lstatSync(this.dir).isDirectory()) throw new LocalInfraError(`${this.dir} is not a directory`);
      // O_EXCL: a symlink left under this name is not followed (the open fails, and the registry is off).
      const probe = join(this.dir, `.probe-${process.pid}`);
      closeSync(openSync(probe, 'wx', 0o600));
      unlinkSync(probe);
      this.usable = true;
      this.sweep();
    } catch {
      this.usable = false;
    }
    return this.usable;
  }

  /** Test workers are killed without an exit event: their reservations are cleared by the next process to start. */
  private sweep(): void {
    for (const name of readdirSync(this.dir)) {
      if (!/^\d+$/.test(name)) continue;
      const file = join(this.dir, name);
      removeIfAbandoned(file);
    }
  }

  private fileOf(port: number): string {
    return join(this.dir, String(port));
  }

  private async osPicked(): Promise<number> {
    for (let tries = 0; tries < 50; tries += 1) {
      const port = await osPickedPort();
      if (this.mine.has(port)) continue;
      this.mine.add(port);
      return port;
    }
    throw new LocalInfraError('could not find a port not handed out before');
  }
}

/** The ports below the OS's ephemeral range (Linux: net.ipv4.ip_local_port_range), or undefined when too few. */
export function rangeBelowEphemeral(rangeFile = '/proc/sys/net/ipv4/ip_local_port_range'): PortRange | undefined {
  let ephemeralFirst: number;
  try {
    ephemeralFirst = Number(readFileSync(rangeFile, 'utf8').trim().split(/\s+/)[0]);
  } catch {
    return undefined;
  }
  if (!Number.isInteger(ephemeralFirst) || ephemeralFirst - FIRST_HANDED_OUT_PORT < MIN_RANGE_SIZE) return undefined;
  return { first: FIRST_HANDED_OUT_PORT, end: ephemeralFirst };
}

/**
 * Removes a reservation whose process is gone, and only that one: between reading it and removing it, another process
 * may have removed it too and reserved the port afresh. So the file is moved aside first, and put back when what was
 * moved is not the file that was judged.
 */
function removeIfAbandoned(file: string): boolean {
  let judged: number;
  try {
    // Anyone may put a file here: a symlink is not followed, a FIFO does not block the read, and only a plain file counts.
    const fd = openSync(file, constants.O_RDONLY | constants.O_NOFOLLOW | constants.O_NONBLOCK);
    try {
      const stat = fstatSync(fd);
      if (!stat.isFile() || stat.size > 32) return false;
      judged = stat.ino;
      if (!holderIsGone(readFileSync(fd, 'utf8'))) return false;
    } finally {
      closeSync(fd);
    }
  } catch {
    return false;
  }
  const aside = `${file}.aside-${process.pid}`;
  try {
    renameSync(file, aside);
  } catch {
    return false;
  }
  const movedTheJudged = statSync(aside).ino === judged;
  if (!movedTheJudged) {
    try {
      linkSync(aside, file);
    } catch {
      // A third process reserved the port in between; the one whose file this was keeps serving on it.
    }
  }
  rmSync(aside, { force: true });
  return movedTheJudged;
}

/** Only a file naming a pid that no longer exists: one being written (still empty) or unreadable is held. */
function holderIsGone(content: string): boolean {
  const pid = Number(content);
  return Number.isInteger(pid) && pid > 0 && !isProcessAlive(pid);
}

function osPickedPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.unref();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() => {
        if (address !== null && typeof address === 'object') resolve(address.port);
        else reject(new LocalInfraError('could not read a free port'));
      });
    });
  });
}

/** Resolves true when a server can listen on 127.0.0.1:port right now. */
export function canBind(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.unref();
    server.once('error', () => resolve(false));
    server.listen(port, '127.0.0.1', () => server.close(() => resolve(true)));
  });
}

const registry = new PortRegistry();

/**
 * Resolves with a port that was free on 127.0.0.1 a moment ago and that no other process of this machine's test runs
 * or `npm start` holds, never one this process handed out before: callers pick several before starting their servers.
 */
export function getFreePort(): Promise<number> {
  return registry.take();
}

/** Returns the first port in `[first, first + count)` that is free and held by no other process, else one from getFreePort. */
export async function findFreePortFrom(first: number, count = 100): Promise<number> {
  return (await registry.takeFirstFree(first, count)) ?? getFreePort();
}
