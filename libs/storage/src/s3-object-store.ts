import { createReadStream } from "node:fs";
import { pipeline, type Readable } from "node:stream";
import {
  DeleteObjectCommand,
  DeleteObjectsCommand,
  GetObjectCommand,
  HeadObjectCommand,
  ListObjectsV2Command,
  S3Client,
  S3ServiceException,
  type S3ClientConfig,
} from "@aws-sdk/client-s3";
import { Upload } from "@aws-sdk/lib-storage";
import { getSignedUrl } from "@aws-sdk/s3-request-presigner";
import { countingLimit } from "./byte-limit.js";
import { isSafeObjectKey, ObjectTooLargeError, UnsafeObjectKeyError, type ObjectStore } from "./object-store.js";

/** Where an S3 object store keeps its objects and how it reaches the service. */
export interface S3ObjectStoreOptions {
  bucket: string;
  /** Prepended to every key (`outputs/`, `uploads/`): several kinds of objects share one bucket. */
  prefix?: string;
  /** The service's URL (MinIO, Ceph, R2, s3rver...); unset: AWS S3 of `region`. */
  endpoint?: string;
  /**
   * The endpoint presigned download URLs name, when clients reach the service at another address than the services
   * do (compose: `http://minio:9000` inside, `http://localhost:9000` outside). Default: `endpoint`.
   */
  publicEndpoint?: string;
  region: string;
  /** `bucket` in the path (`http://host/bucket/key`) rather than the host name: MinIO and most self-hosted services. */
  forcePathStyle: boolean;
  /** Static credentials; unset: the SDK's default chain (AWS_* variables, web identity, instance role). */
  credentials?: { accessKeyId: string; secretAccessKey: string };
}

/** Thrown when the S3 service refuses or fails a request; the message names the operation and S3's error code only. */
export class ObjectStoreError extends Error {
  override readonly name = "ObjectStoreError";
  constructor(
    readonly operation: string,
    readonly s3Code: string,
    readonly httpStatus: number | undefined,
  ) {
    super(`object store: ${operation} failed: ${s3Code}${httpStatus ? ` (HTTP ${httpStatus})` : ""}`);
  }
}

/** The longest wait for a connection to the service, and the longest silence inside one request. */
const CONNECT_TIMEOUT_MS = 10_000;
const REQUEST_IDLE_TIMEOUT_MS = 60_000;
/** Objects deleted by one DeleteObjects request (S3's maximum). */
const DELETE_BATCH = 1000;

/**
 * An ObjectStore in a bucket of any S3-compatible service (`@aws-sdk/client-s3`). Puts go through
 * `@aws-sdk/lib-storage` (one PutObject for small objects, a multipart upload, aborted on failure, for large ones),
 * so a reader never sees part of an object. Downloads can skip the gateway through presigned GET URLs.
 */
export function createS3ObjectStore(options: S3ObjectStoreOptions): ObjectStore {
  const prefix = options.prefix ?? "";
  const clientConfig = (endpoint: string | undefined): S3ClientConfig => ({
    region: options.region,
    forcePathStyle: options.forcePathStyle,
    ...(endpoint ? { endpoint } : {}),
    ...(options.credentials ? { credentials: options.credentials } : {}),
    // Checksums only where S3 requires them: the SDK's default (a CRC trailer on every upload, since 3.729) is
    // refused by several S3-compatible services and test servers.
    requestChecksumCalculation: "WHEN_REQUIRED",
    responseChecksumValidation: "WHEN_REQUIRED",
    requestHandler: { connectionTimeout: CONNECT_TIMEOUT_MS, requestTimeout: REQUEST_IDLE_TIMEOUT_MS },
  });
  const client = new S3Client(clientConfig(options.endpoint));
  // Signing is local: the presigning client never sends a request, it only names the public endpoint in its URLs.
  const presigner = options.publicEndpoint && options.publicEndpoint !== options.endpoint ? new S3Client(clientConfig(options.publicEndpoint)) : client;

  const objectKey = (key: string) => {
    if (!isSafeObjectKey(key)) throw new UnsafeObjectKeyError(key);
    return `${prefix}${key}`;
  };

  /**
   * Runs an S3 call; "no such object" (a GET's NoSuchKey, a HEAD's bodiless 404) becomes undefined, any other S3
   * failure (a missing bucket included) an ObjectStoreError without the request's details.
   */
  async function call<T>(operation: string, run: () => Promise<T>): Promise<T | undefined> {
    try {
      return await run();
    } catch (error) {
      if (error instanceof S3ServiceException) {
        const status = error.$metadata?.httpStatusCode;
        if (error.name === "NoSuchKey" || error.name === "NotFound") return undefined;
        throw new ObjectStoreError(operation, error.name, status);
      }
      throw error;
    }
  }

  async function upload(operation: string, key: string, body: Readable, contentType: string): Promise<void> {
    const Key = objectKey(key);
    await call(operation, () => new Upload({ client, params: { Bucket: options.bucket, Key, Body: body, ContentType: contentType } }).done());
  }

  return {
    kind: "s3",

    async put(key, filePath, contentType) {
      const counter = countingLimit(undefined);
      await upload("put", key, pipeline(createReadStream(filePath), counter, () => undefined), contentType);
      return { size: counter.bytes };
    },

    async putStream(key, body, contentType, putOptions) {
      const limited = countingLimit(putOptions?.maxBytes);
      try {
        await upload("putStream", key, pipeline(body, limited, () => undefined), contentType);
      } catch (error) {
        // The upload reports the stream's own error; the byte limit's is the one the caller can act on.
        if (putOptions?.maxBytes !== undefined && limited.bytes > putOptions.maxBytes) throw new ObjectTooLargeError(putOptions.maxBytes);
        throw error;
      }
      return { size: limited.bytes };
    },

    async open(key) {
      if (!isSafeObjectKey(key)) return undefined;
      const object = await call("open", () => client.send(new GetObjectCommand({ Bucket: options.bucket, Key: objectKey(key) })));
      if (!object?.Body) return undefined;
      return { stream: object.Body as Readable, size: object.ContentLength ?? 0, contentType: object.ContentType ?? "application/octet-stream" };
    },

    async head(key) {
      if (!isSafeObjectKey(key)) return undefined;
      const object = await call("head", () => client.send(new HeadObjectCommand({ Bucket: options.bucket, Key: objectKey(key) })));
      if (!object) return undefined;
      return { size: object.ContentLength ?? 0, contentType: object.ContentType ?? "application/octet-stream", storedAt: object.LastModified?.getTime() ?? 0 };
    },

    async delete(key) {
      const Key = objectKey(key);
      await call("delete", () => client.send(new DeleteObjectCommand({ Bucket: options.bucket, Key })));
    },

    async deleteStoredBefore(before) {
      // A bucket lifecycle rule does the same on the service's side (docs/operations.md); this sweep needs none.
      let deleted = 0;
      let continuationToken: string | undefined;
      do {
        const page = await call("list", () =>
          client.send(new ListObjectsV2Command({ Bucket: options.bucket, Prefix: prefix, ContinuationToken: continuationToken })),
        );
        const expired = (page?.Contents ?? [])
          .filter((object) => object.Key !== undefined && object.LastModified !== undefined && object.LastModified.getTime() < before)
          .map((object) => ({ Key: object.Key! }));
        for (let start = 0; start < expired.length; start += DELETE_BATCH) {
          const batch = expired.slice(start, start + DELETE_BATCH);
          const result = await call("deleteMany", () =>
            client.send(new DeleteObjectsCommand({ Bucket: options.bucket, Delete: { Objects: batch, Quiet: true } })),
          );
          deleted += batch.length - (result?.Errors?.length ?? 0);
        }
        continuationToken = page?.IsTruncated ? page.NextContinuationToken : undefined;
      } while (continuationToken);
      return deleted;
    },

    async presignedDownloadUrl(key, { expiresInSeconds }) {
      const command = new GetObjectCommand({ Bucket: options.bucket, Key: objectKey(key) });
      return getSignedUrl(presigner, command, { expiresIn: Math.max(1, Math.floor(expiresInSeconds)) });
    },
  };
}
