/**
 * A local Redis server (Debian package `redis-server`).
 */
import { mkdir } from 'node:fs/promises';
import { Socket } from 'node:net';
import path from 'node:path';
import {
  ensureExecutable,
  awaitStartedServer,
  recordedServer,
  retryStart,
  spawnServer,
  type LocalServer,
  type LogFn,
} from './local-process.js';
import { findFreePortFrom, getFreePort } from './free-port.js';

/** The URL of a Redis server on its default port. */
export const DEFAULT_REDIS_URL = 'redis://127.0.0.1:6379';

/** First port tried for a persistent local server, next to the default 6379. */
const PERSISTENT_PORT_FROM = 6380;

/** Where and how to run a local Redis. */
export interface LocalRedisOptions {
  /** Directory for the RDB snapshot (persistent mode only), `redis.log` and `server.json`. */
  dir: string;
  /** Keep snapshots in `dir` and reuse a server already running from it; otherwise no persistence at all. */
  persistent: boolean;
  log: LogFn;
}

/** Resolves true when the Redis at `url` answers `PING` with `+PONG` (plain TCP, no client library needed). */
export function canPingRedis(url: string, timeoutMs = 2000): Promise<boolean> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve) => {
    const socket = new Socket();
    let reply = '';
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(timeoutMs, () => done(false));
    socket.once('error', () => done(false));
    socket.on('data', (chunk) => {
      reply += chunk.toString('latin1');
      if (reply.includes('\r\n')) done(reply.startsWith('+PONG'));
    });
    socket.connect(Number(port || 6379), hostname.replace(/^\[|\]$/g, ''), () => socket.write('PING\r\n'));
  });
}

/** Starts `redis-server` bound to 127.0.0.1; in persistent mode reuses one already running from `options.dir`. */
export async function startLocalRedis(options: LocalRedisOptions): Promise<LocalServer> {
  const redisServer = await ensureExecutable('redis-server', 'redis-server', options.log);
  await mkdir(options.dir, { recursive: true });
  const recordFile = path.join(options.dir, 'server.json');

  if (options.persistent) {
    const record = await recordedServer(recordFile, canPingRedis);
    if (record) {
      options.log(`redis: reusing server pid ${record.pid} from ${options.dir} at ${record.url}`);
      return { url: record.url, owned: false, stop: async () => undefined };
    }
  }

  // Persistent: redis' default snapshot schedule into dir. Tests: nothing written to disk.
  const persistence = options.persistent ? ['--dbfilename', 'dump.rdb'] : ['--save', '', '--appendonly', 'no'];
  return retryStart(3, async () => {
    const port = options.persistent ? await findFreePortFrom(PERSISTENT_PORT_FROM) : await getFreePort();
    const server = spawnServer({
      name: 'redis-server',
      command: redisServer,
      args: ['--port', String(port), '--bind', '127.0.0.1', '--dir', options.dir, '--daemonize', 'no', ...persistence],
      logFile: path.join(options.dir, 'redis.log'),
      cwd: options.dir,
      stopSignal: 'SIGTERM',
    });
    const url = `redis://127.0.0.1:${port}`;
    await awaitStartedServer(server, { url, probe: () => canPingRedis(url), what: `answering PING on ${url}`, ...(options.persistent ? { recordFile } : {}) });
    options.log(`redis: started pid ${server.pid} at ${url}`);
    return { url, owned: true, stop: () => server.stop() };
  });
}
