/**
 * A local NATS server with JetStream (`nats-server -js`, Debian package `nats-server`).
 */
import { mkdir, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import {
  ensureExecutable,
  findFreePortFrom,
  getFreePort,
  isProcessAlive,
  readJson,
  retryStart,
  spawnServer,
  waitUntilReady,
  type LocalServer,
  type LogFn,
} from './local-process.js';

/** The URL of a NATS server on its default port. */
export const DEFAULT_NATS_URL = 'nats://127.0.0.1:4222';

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
    const connection = await connect({ servers: url, reconnect: false, timeout: 2000 });
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

/** What a persistent server records so a later run can find it. */
interface ServerRecord {
  pid: number;
  url: string;
}

/** Starts `nats-server -js` with its store in `options.dir`; in persistent mode reuses one already running there. */
export async function startLocalNats(options: LocalNatsOptions): Promise<LocalServer> {
  const natsServer = await ensureExecutable('nats-server', 'nats-server', options.log);
  await mkdir(options.dir, { recursive: true });
  const recordFile = path.join(options.dir, 'server.json');

  if (options.persistent) {
    const record = readJson<ServerRecord>(recordFile);
    if (record !== undefined && isProcessAlive(record.pid) && (await canConnectNats(record.url, true))) {
      options.log(`nats: reusing server pid ${record.pid} from ${options.dir} at ${record.url}`);
      return { url: record.url, owned: false, stop: async () => undefined };
    }
  }

  return retryStart(3, async () => {
    const port = options.persistent ? await findFreePortFrom(PERSISTENT_PORT_FROM) : await getFreePort();
    const server = spawnServer({
      name: 'nats-server',
      command: natsServer,
      args: ['-js', '-a', '127.0.0.1', '-p', String(port), '-sd', path.join(options.dir, 'jetstream')],
      logFile: path.join(options.dir, 'nats.log'),
      cwd: options.dir,
      stopSignal: 'SIGTERM',
    });
    const url = `nats://127.0.0.1:${port}`;
    try {
      await waitUntilReady(server, () => canConnectNats(url), 30_000, `accepting connections on ${url}`);
    } catch (error) {
      await server.stop();
      throw error;
    }
    if (options.persistent) await writeFile(recordFile, JSON.stringify({ pid: server.pid, url } satisfies ServerRecord));
    options.log(`nats: started pid ${server.pid} at ${url}`);
    return { url, owned: true, stop: () => server.stop() };
  });
}
