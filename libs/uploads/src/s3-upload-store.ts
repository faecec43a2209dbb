import type { Readable } from "node:stream";
import { DeleteObjectsCommand, GetObjectCommand, ListObjectsV2Command, NoSuchKey, PutObjectCommand, S3Client, type S3ClientConfig } from "@aws-sdk/client-s3";
import { S3Store } from "@tus/s3-store";
import { DataStore, Upload, type KvStore } from "@tus/utils";
import type { S3ObjectStoreOptions } from "@renderbus/storage";
import { createTusUploadStore, KEPT_SUFFIX, keptUntilOf } from "./tus-upload-store.js";
import type { UploadStore } from "./upload-store.js";

/** The longest wait for a connection to the service, and the longest silence inside one request (as outputs). */
const CONNECT_TIMEOUT_MS = 10_000;
const REQUEST_IDLE_TIMEOUT_MS = 60_000;
/** The info objects `@tus/s3-store` keeps beside each upload (`<id>.info`: size, offset, metadata as JSON). */
const INFO_SUFFIX = ".info";

/** Where an S3 upload store keeps its uploads: a bucket and a prefix (`uploads/`), as S3ObjectStoreOptions. */
export type S3UploadStoreOptions = Omit<S3ObjectStoreOptions, "publicEndpoint"> & {
  retentionMs: number;
  /** The size of the parts sent to S3 (at least 5 MiB, S3's minimum); default 8 MiB. */
  partSize?: number;
};

/**
 * A tus data store that keeps another's objects under a prefix: `@tus/s3-store` names its objects by the upload id
 * alone (`<id>`, `<id>.info`, `<id>.part`), and outputs share the bucket. Clients and the rest of the code see bare
 * ids; only the S3 keys carry the prefix.
 */
class PrefixedDataStore extends DataStore {
  constructor(
    private readonly inner: S3Store,
    private readonly prefix: string,
    /** Deletes objects by key, missing ones ignored. */
    private readonly deleteKeys: (keys: string[]) => Promise<void>,
  ) {
    super();
    this.extensions = inner.extensions;
  }

  private key(id: string): string {
    return `${this.prefix}${id}`;
  }

  private bare(upload: Upload, id: string): Upload {
    return new Upload({ ...upload, id, metadata: upload.metadata, storage: upload.storage, offset: upload.offset, size: upload.size });
  }

  override async create(file: Upload): Promise<Upload> {
    const created = await this.inner.create(new Upload({ ...file, id: this.key(file.id), metadata: file.metadata, offset: file.offset, size: file.size }));
    return this.bare(created, file.id);
  }

  override async remove(id: string): Promise<void> {
    const key = this.key(id);
    // `@tus/s3-store` aborts the multipart upload first, which S3 refuses (NoSuchUpload) once the upload completed,
    // and keeps the `.part` object of an unfinished one: a finished upload is deleted here, by its objects.
    await this.inner.getUpload(key); // FILE_NOT_FOUND when there is no such upload
    try {
      await this.inner.remove(key);
    } catch (error) {
      if ((error as { status_code?: number }).status_code !== 404) throw error;
    }
    await this.deleteKeys([key, `${key}${INFO_SUFFIX}`, `${key}.part`, `${key}${KEPT_SUFFIX}`]);
  }

  override write(stream: Readable, id: string, offset: number): Promise<number> {
    return this.inner.write(stream, this.key(id), offset);
  }

  override async getUpload(id: string): Promise<Upload> {
    return this.bare(await this.inner.getUpload(this.key(id)), id);
  }

  override declareUploadLength(id: string, length: number): Promise<void> {
    return this.inner.declareUploadLength(this.key(id), length);
  }

  override deleteExpired(): Promise<number> {
    // The store's sweep (createTusUploadStore's deleteExpired) lists the prefix itself.
    return Promise.resolve(0);
  }

  override getExpiration(): number {
    return this.inner.getExpiration();
  }

  read(id: string): Promise<Readable> {
    return this.inner.read(this.key(id));
  }
}

/**
 * No cache of upload records: `@tus/s3-store` keeps them in process memory by default, which goes stale when another
 * gateway replica (or the worker) changes the upload; every request reads the `.info` object instead.
 */
const noCache: KvStore<never> = { get: async () => undefined, set: async () => undefined, delete: async () => undefined };

/**
 * Uploads in a bucket of any S3-compatible service (`@tus/s3-store`): each upload is a multipart upload to
 * `<prefix><id>` completed with its last byte, its record in `<prefix><id>.info`, the "kept until" mark of an upload a
 * job named in `<prefix><id>.kept`. Gateway replicas and workers on any
 * machine reach the same uploads, no shared volume (docs/uploads.md).
 */
export function createS3UploadStore(options: S3UploadStoreOptions): UploadStore {
  const prefix = options.prefix ?? "";
  const clientConfig: S3ClientConfig = {
    region: options.region,
    forcePathStyle: options.forcePathStyle,
    ...(options.endpoint ? { endpoint: options.endpoint } : {}),
    ...(options.credentials ? { credentials: options.credentials } : {}),
    // As libs/storage: checksums only where S3 requires them (several S3-compatible services refuse the CRC trailer).
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    requestHandler: { connectionTimeout: CONNECT_TIMEOUT_MS, requestTimeout: REQUEST_IDLE_TIMEOUT_MS },
  };
  const s3Store = new S3Store({
    s3ClientConfig: { ...clientConfig, bucket: options.bucket },
    partSize: options.partSize ?? 8 * 1024 * 1024,
    expirationPeriodInMilliseconds: options.retentionMs,
    // Expiry is our own sweep, not a bucket lifecycle rule on tags (which not every S3-compatible service has).
    useTags: false,
    cache: noCache as KvStore<never>,
  });
  const client = new S3Client(clientConfig);
  const deleteKeys = async (keys: string[]) => {
    await client.send(new DeleteObjectsCommand({ Bucket: options.bucket, Delete: { Objects: keys.map((Key) => ({ Key })), Quiet: true } }));
  };
  const dataStore = new PrefixedDataStore(s3Store, prefix, deleteKeys);
  /** The ids of the objects under the prefix whose key ends with `suffix`. */
  const listBySuffix = async (suffix: string): Promise<string[]> => {
    const ids: string[] = [];
    let token: string | undefined;
    do {
      const page = await client.send(new ListObjectsV2Command({ Bucket: options.bucket, Prefix: prefix, ContinuationToken: token }));
      for (const object of page.Contents ?? []) {
        const key = object.Key ?? "";
        if (key.endsWith(suffix)) ids.push(key.slice(prefix.length, -suffix.length));
      }
      token = page.IsTruncated ? page.NextContinuationToken : undefined;
    } while (token);
    return ids;
  };
  const listIds = () => listBySuffix(INFO_SUFFIX);
  const markKey = (id: string) => `${prefix}${id}${KEPT_SUFFIX}`;
  return createTusUploadStore({
    dataStore,
    retentionMs: options.retentionMs,
    listIds,
    readMark: async (id) => {
      try {
        const object = await client.send(new GetObjectCommand({ Bucket: options.bucket, Key: markKey(id) }));
        return keptUntilOf(await object.Body?.transformToString());
      } catch (error) {
        if (error instanceof NoSuchKey || (error as { $metadata?: { httpStatusCode?: number } }).$metadata?.httpStatusCode === 404) return undefined;
        throw error;
      }
    },
    writeMark: async (id, until) => {
      await client.send(new PutObjectCommand({ Bucket: options.bucket, Key: markKey(id), Body: String(until), ContentType: "text/plain" }));
    },
    removeMark: (id) => deleteKeys([markKey(id)]),
    listMarks: () => listBySuffix(KEPT_SUFFIX),
  });
}
