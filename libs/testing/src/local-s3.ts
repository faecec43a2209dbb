/**
 * A local S3-protocol server (`s3rver` from npm, objects kept as files in a folder) for the S3 object store's tests,
 * run inside the calling process: by the global setup when the run asks for `STORAGE=s3`, or by a test file of its own.
 */
import type { Server } from 'node:http';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { LogFn } from './local-process.js';

/** The bucket a local S3 server starts with. */
export const LOCAL_S3_BUCKET = 'renderbus-test';

/** s3rver's fixed credentials (it checks requests are signed with them). */
const ACCESS_KEY_ID = 'S3RVER';
const SECRET_ACCESS_KEY = 'S3RVER';

/** How to reach a local S3 server, with the variables a service reads (libs/storage storage-config.ts). */
export interface LocalS3 {
  endpoint: string;
  bucket: string;
  /** STORAGE=s3 and the S3_* variables that point a service at this server. */
  env: Record<string, string>;
  stop(): Promise<void>;
}

/** Starts s3rver on a free port of 127.0.0.1 with an empty bucket, in a temporary folder removed by stop(). */
export async function startLocalS3({ log }: { log?: LogFn } = {}): Promise<LocalS3> {
  // Loaded here: scripts and services that import this package never need s3rver's dependencies.
  const { default: S3rver } = await import('s3rver');
  const directory = await mkdtemp(path.join(tmpdir(), 'rb-s3-'));
  const server = new S3rver({ address: '127.0.0.1', port: 0, silent: true, directory, configureBuckets: [{ name: LOCAL_S3_BUCKET, configs: [] }] });
  const { port } = await server.run();
  const endpoint = `http://127.0.0.1:${port}`;
  log?.(`s3: s3rver listening at ${endpoint} (bucket ${LOCAL_S3_BUCKET})`);
  return {
    endpoint,
    bucket: LOCAL_S3_BUCKET,
    env: {
      STORAGE: 's3',
      S3_ENDPOINT: endpoint,
      S3_BUCKET: LOCAL_S3_BUCKET,
      S3_REGION: 'us-east-1',
      S3_ACCESS_KEY_ID: ACCESS_KEY_ID,
      S3_SECRET_ACCESS_KEY: SECRET_ACCESS_KEY,
      S3_FORCE_PATH_STYLE: 'true',
    },
    stop: async () => {
      // Clients keep connections alive; close() would wait for them.
      (server as unknown as { httpServer?: Server }).httpServer?.closeAllConnections();
      await server.close();
      await rm(directory, { recursive: true, force: true });
    },
  };
}
