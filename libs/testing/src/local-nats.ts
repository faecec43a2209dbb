/**
 * A local NATS server with JetStream (Debian package `nats-server`), started from a generated config: one user per
 * service with the permissions of libs/bus/src/nats-permissions.ts, passwords derived from the dev seed, and a
 * superuser for test harnesses. Its URL carries the superuser's credentials (`nats://renderbus-dev:...@127.0.0.1:port`).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import { splitNatsUrl } from '../../bus/src/nats-credentials.js';
import { ANY_NAMESPACE, DEV_SUPERUSER, devNatsPassword, natsAuthorizationBlock } from '../../bus/src/nats-permissions.js';
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

/** A URL of a local server: the superuser's credentials in it, for harnesses and `Bus.connect`. */
export function localNatsUrl(port: number): string {
  return `nats://${DEV_SUPERUSER}:${devNatsPassword(DEV_SUPERUSER)}@127.0.0.1:${port}`;
}

/**
 * The URL of a NATS server on its default port, as a local server would be reached: with the dev superuser. A server
 * there is used only when it demands these credentials (see {@link isLocalNatsUsable}); an open one is not.
 */
export const DEFAULT_NATS_URL = localNatsUrl(4222);

/** nats.js options for a URL that may carry `user:password@` (which nats.js ignores). */
export function natsConnectOptions(url: string): { servers: string; user?: string; pass?: string } {
  const { url: servers, credentials } = splitNatsUrl(url);
  return credentials?.user ? { servers, user: credentials.user, pass: credentials.password ?? '' } : { servers };
}

/**
 * The nats-server config of a local server: JetStream with its store in `storeDir`, listening on 127.0.0.1 only,
 * every service user with its permissions for production subjects and any test namespace.
 */
export function localNatsConfig(port: number, storeDir: string): string {
  return [
    `listen: "127.0.0.1:${port}"`,
    `jetstream { store_dir: ${JSON.stringify(storeDir)} }`,
    natsAuthorizationBlock({
      passwords: (user) => devNatsPassword(user),
      namespaces: ANY_NAMESPACE,
      superuser: { user: DEV_SUPERUSER, password: devNatsPassword(DEV_SUPERUSER) },
    }),
  ].join('\n');
}

/** First port tried for a persistent local server, next to the default 4222. */
const PERSISTENT_PORT_FROM = 4223;

/** Where and how to run a local NATS server. */
export interface LocalNatsOptions {
  /** Directory for the JetStream store (`jetstream/`), `nats.log` and `server.json`. */
  dir: string;
  /** Reuse a server already running from `dir` (recorded in `server.json`) instead of starting another. */
  persistent: boolean;
  log: LogFn;
}

/**
 * Resolves true when a NATS server at `url` accepts a connection and, when `requireJetStream`, has JetStream
 * enabled (Renderbus needs it; a plain NATS on the default port is not enough).
 */
export async function canConnectNats(url: string, requireJetStream = false): Promise<boolean> {
  try {
    const connection = await connect({ ...natsConnectOptions(url), reconnect: false, timeout: 2000 });
    try {
      if (requireJetStream) await jetstreamManager(connection);
      return true;
    } finally {
      await connection.close();
    }
  } catch {
    return false;
  }
}

/**
 * Resolves true when the server at `url` (with credentials) has JetStream, accepts those credentials and refuses a
 * client without any: a server started from {@link localNatsConfig}, not an open one someone left on the port.
 */
export async function isLocalNatsUsable(url: string): Promise<boolean> {
  const { url: bare, credentials } = splitNatsUrl(url);
  if (!credentials?.user) return canConnectNats(url, true);
  return (await canConnectNats(url, true)) && !(await canConnectNats(bare));
}

/** Starts `nats-server -js` with its store in `options.dir`; in persistent mode reuses one already running there. */
export async function startLocalNats(options: LocalNatsOptions): Promise<LocalServer> {
  const natsServer = await ensureExecutable('nats-server', 'nats-server', options.log);
  await mkdir(options.dir, { recursive: true });
  const recordFile = path.join(options.dir, 'server.json');

  if (options.persistent) {
    const record = await recordedServer(recordFile, isLocalNatsUsable);
    if (record) {
      options.log(`nats: reusing server pid ${record.pid} from ${options.dir} at ${splitNatsUrl(record.url).url}`);
      return { url: record.url, owned: false, stop: async () => undefined };
    }
  }

  return retryStart(3, async () => {
    const port = options.persistent ? await findFreePortFrom(PERSISTENT_PORT_FROM) : await getFreePort();
    const configFile = path.join(options.dir, 'nats.conf');
    await writeFile(configFile, localNatsConfig(port, path.join(options.dir, 'jetstream')), { mode: 0o600 });
    const server = spawnServer({
      name: 'nats-server',
      command: natsServer,
      args: ['-c', configFile],
      logFile: path.join(options.dir, 'nats.log'),
      cwd: options.dir,
      stopSignal: 'SIGTERM',
    });
    const url = localNatsUrl(port);
    await awaitStartedServer(server, { url, probe: () => canConnectNats(url), what: `accepting connections on port ${port}`, ...(options.persistent ? { recordFile } : {}) });
    options.log(`nats: started pid ${server.pid} at nats://127.0.0.1:${port} (users and permissions from nats-permissions.ts)`);
    return { url, owned: true, stop: () => server.stop() };
  });
}
