import type { Readable } from "node:stream";

/** An opened stored object, ready to stream to a client. */
export interface StoredObject {
  stream: Readable;
  size: number;
  contentType: string;
}

/** What a store knows about an object without reading it. */
export interface ObjectInfo {
  size: number;
  contentType: string;
  /** When it was written (epoch ms): the start of its retention period. */
  storedAt: number;
}

/** Options of {@link ObjectStore.putStream}. */
export interface PutStreamOptions {
  /**
   * The most bytes accepted: a longer stream fails the put with {@link ObjectTooLargeError} and nothing is stored.
   * Unlimited when unset (the caller bounds the stream).
   */
  maxBytes?: number;
}

/**
 * Where job outputs (and uploads) live: the local disk (local-object-store.ts, the default) or an S3-compatible
 * service (s3-object-store.ts). Keys are `/`-separated plain segments ({@link isSafeObjectKey}), e.g.
 * `<orgId>/<jobId>/output.mp4`; a store refuses any other key. Writes are all-or-nothing: a reader sees the old
 * object, the new one, or none, never part of one. docs/operations.md ("Object storage") explains the choice.
 */
export interface ObjectStore {
  /** `local` or `s3`: which implementation this is (logs, the gateway's choice of streaming or redirecting). */
  readonly kind: "local" | "s3";
  /** Copies the file at `filePath` under `key`; replaces an existing object (re-runs after a crash are harmless). */
  put(key: string, filePath: string, contentType: string): Promise<{ size: number }>;
  /** Stores what `body` yields under `key`; replaces an existing object. Resolves with the number of bytes stored. */
  putStream(key: string, body: Readable, contentType: string, options?: PutStreamOptions): Promise<{ size: number }>;
  /** The stored object, or undefined when there is none (or the key is not a safe key). */
  open(key: string): Promise<StoredObject | undefined>;
  /** Size, content type and storage time of the object, or undefined when there is none (or the key is not safe). */
  head(key: string): Promise<ObjectInfo | undefined>;
  /** Deletes the object; deleting a missing one is not an error. */
  delete(key: string): Promise<void>;
  /** Deletes objects stored before `before` (epoch ms), the end of the retention period; returns how many. */
  deleteStoredBefore(before: number): Promise<number>;
  /**
   * A URL that downloads the object straight from the store, valid for `expiresInSeconds`, or undefined when the
   * store has no such URLs (the local disk: the gateway streams the file itself). It does not check that the object
   * exists.
   */
  presignedDownloadUrl(key: string, options: { expiresInSeconds: number }): Promise<string | undefined>;
}

/** Thrown by {@link ObjectStore.putStream} when the stream is longer than `maxBytes`; nothing was stored. */
export class ObjectTooLargeError extends Error {
  override readonly name = "ObjectTooLargeError";
  constructor(readonly maxBytes: number) {
    super(`the object is larger than ${maxBytes} bytes`);
  }
}

/** Thrown for a key that {@link isSafeObjectKey} refuses, by the calls that write or delete. */
export class UnsafeObjectKeyError extends Error {
  override readonly name = "UnsafeObjectKeyError";
  constructor(key: string) {
    super(`unsafe object key: ${JSON.stringify(key.slice(0, 600))}`);
  }
}

const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/**
 * Whether a key is safe to map onto a file system or a bucket: 1-8 `/`-separated segments of letters, digits, `_`,
 * `-`, `.`, none starting with a dot (so no `..`, no hidden files, no absolute paths, no backslashes).
 */
export function isSafeObjectKey(key: string): boolean {
  if (key.length === 0 || key.length > 512) return false;
  const segments = key.split("/");
  return segments.length <= 8 && segments.every((segment) => SEGMENT.test(segment));
}
