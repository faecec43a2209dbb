import type { DataStore } from "@tus/utils";

/**
 * The metadata key under which the gateway records the org that created an upload. The gateway sets it itself on
 * creation (any value a client sends under this key is replaced), so it is the upload's owner, never a claim.
 */
export const UPLOAD_ORG_METADATA = "orgId";

/** What `GET /uploads/{id}` shows, plus the owner (docs/uploads.md). */
export interface UploadDescription {
  id: string;
  orgId: string;
  /** Declared length in bytes; null while the client deferred it (tus `Upload-Defer-Length`). */
  size: number | null;
  /** Bytes received so far: where an interrupted upload resumes. */
  offset: number;
  complete: boolean;
  createdAt: number;
  /** `createdAt` plus the retention, or later when a job named it (see {@link UploadStore.keepUntil}). */
  expiresAt: number;
  /** The file name the client gave (tus metadata `filename`, as tus-js-client sends it), or null. */
  filename: string | null;
}

/**
 * Where uploads live. The gateway serves the tus protocol over `dataStore` and describes uploads; the worker reads
 * a finished one into a job's directory. Implementations: the local disk (`createLocalUploadStore`) and an S3 bucket
 * (`createS3UploadStore`), chosen by STORAGE in `createUploadStore`.
 */
export interface UploadStore {
  /** The tus data store `@tus/server` writes through. */
  readonly dataStore: DataStore;
  /** How long an upload is kept after its creation, in milliseconds (UPLOAD_RETENTION_HOURS), unless used. */
  readonly retentionMs: number;
  /** The upload, or undefined when there is none (or `id` is not an upload id). */
  describe(id: string): Promise<UploadDescription | undefined>;
  /** Creates an empty upload of `size` bytes owned by `orgId` (what a tus POST does), to be sent with tus PATCH requests. */
  create(options: { orgId: string; size: number; filename?: string }): Promise<UploadDescription>;
  /** Creates a complete upload of `bytes` owned by `orgId` in one call (small files sent inline). */
  createComplete(options: { orgId: string; bytes: Buffer; filename?: string }): Promise<UploadDescription>;
  /** Copies a stored upload's bytes to `destination` (a local file). @throws when the upload is gone. */
  copyTo(id: string, destination: string): Promise<void>;
  /**
   * Keeps an upload at least until `until` (epoch ms): a job named it, and reads it only when a worker starts the job,
   * which may be after the upload's own retention. Never shortens what an upload is kept for.
   */
  keepUntil(id: string, until: number): Promise<void>;
  /** Deletes uploads whose `expiresAt` has passed, finished or not; returns how many. */
  deleteExpired(now?: number): Promise<number>;
}
