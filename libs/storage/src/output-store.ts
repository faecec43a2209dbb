import type { Readable } from "node:stream";

/** An opened stored output, ready to stream to a client. */
export interface StoredOutput {
  stream: Readable;
  size: number;
  contentType: string;
}

/**
 * Where job outputs live. The worker puts, the gateway opens; keys look like `<orgId>/<jobId>/output.<ext>`.
 * Implementations other than the local directory (S3-like stores) fit behind the same two calls.
 */
export interface OutputStore {
  /** Copies the file at `filePath` under `key`; replaces an existing object (re-runs after a crash are harmless). */
  put(key: string, filePath: string, contentType: string): Promise<{ size: number }>;
  /** The stored object, or undefined when there is none (or the key is not a safe key). */
  open(key: string): Promise<StoredOutput | undefined>;
  /** Deletes outputs stored before `before` (epoch ms), the end of the retention period; returns how many. */
  deleteStoredBefore?(before: number): Promise<number>;
}

const SEGMENT = /^[A-Za-z0-9_][A-Za-z0-9_.-]{0,127}$/;

/**
 * Whether a key is safe to map onto a file system: 1-8 `/`-separated segments of letters, digits, `_`, `-`, `.`,
 * none starting with a dot (so no `..`, no hidden files, no absolute paths, no backslashes).
 */
export function isSafeOutputKey(key: string): boolean {
  if (key.length === 0 || key.length > 512) return false;
  const segments = key.split("/");
  return segments.length <= 8 && segments.every((segment) => SEGMENT.test(segment));
}
