/**
 * A local S3-protocol server (`s3rver` from npm, objects kept as files in a folder) for the S3 object store's tests,
 * run inside the calling process: by the global setup when the run asks for `STORAGE=s3`, or by a test file of its own.
 */
import type { Server } from 'node:http';
import { mkdtemp, readdir, readFile, rm, stat } from 'node:fs/promises';
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
  addMultipartListAndAbort(server as unknown as S3rverInternals);
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

/** The parts of s3rver (a Koa application with a file-system store) that {@link addMultipartListAndAbort} uses. */
interface S3rverInternals {
  middleware: Array<(context: KoaContext, next: () => Promise<void>) => Promise<void>>;
  store: { getResourcePath(bucket: string, key: string | undefined, resource: string): string };
}
interface KoaContext {
  method: string;
  path: string;
  query: Record<string, string | string[] | undefined>;
  status: number;
  body: unknown;
  type: string;
}

/**
 * s3rver 3 has multipart uploads but not ListParts (GET `?uploadId`) nor AbortMultipartUpload (DELETE `?uploadId`),
 * which every S3 service has and `@tus/s3-store` (the S3 upload store, libs/uploads) needs to resume an upload and to
 * delete one. Both are served here from s3rver's own files (`<bucket>/._S3rver_uploads/<uploadId>/<partNumber>` and
 * its `.md5`), ahead of s3rver's routes.
 */
function addMultipartListAndAbort(server: S3rverInternals): void {
  const xml = (text: string) => text.replace(/[<>&'"]/g, (c) => `&#${c.charCodeAt(0)};`);
  server.middleware.unshift(async (context, next) => {
    const uploadId = context.query.uploadId;
    const match = /^\/([^/]+)\/(.+)$/.exec(context.path);
    if (typeof uploadId !== 'string' || !match || (context.method !== 'GET' && context.method !== 'DELETE') || 'partNumber' in context.query) return next();
    const [, bucket, key] = match;
    const directory = /^[0-9a-f]{32}$/.test(uploadId) ? path.join(server.store.getResourcePath(bucket!, undefined, 'uploads'), uploadId) : undefined;
    const names = directory ? await readdir(directory).catch(() => undefined) : undefined;
    if (!directory || !names) {
      context.status = 404;
      context.type = 'application/xml';
      context.body = `<?xml version="1.0" encoding="UTF-8"?><Error><Code>NoSuchUpload</Code><Message>The specified upload does not exist.</Message><UploadId>${xml(uploadId)}</UploadId></Error>`;
      return;
    }
    if (context.method === 'DELETE') {
      await rm(directory, { recursive: true, force: true });
      context.status = 204;
      return;
    }
    const numbers = names.filter((name) => /^\d+$/.test(name)).map(Number).sort((a, b) => a - b);
    const parts = await Promise.all(
      numbers.map(async (number) => {
        const file = path.join(directory, String(number));
        const [info, md5] = await Promise.all([stat(file), readFile(`${file}.md5`, 'utf8')]);
        return `<Part><PartNumber>${number}</PartNumber><LastModified>${info.mtime.toISOString()}</LastModified><ETag>&quot;${md5.trim()}&quot;</ETag><Size>${info.size}</Size></Part>`;
      }),
    );
    context.status = 200;
    context.type = 'application/xml';
    context.body =
      `<?xml version="1.0" encoding="UTF-8"?><ListPartsResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/"><Bucket>${xml(bucket!)}</Bucket>` +
      `<Key>${xml(decodeURIComponent(key!))}</Key><UploadId>${uploadId}</UploadId><PartNumberMarker>0</PartNumberMarker>` +
      `<MaxParts>10000</MaxParts><IsTruncated>false</IsTruncated>${parts.join('')}</ListPartsResult>`;
  });
}
