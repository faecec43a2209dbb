import { Upload } from "tus-js-client";
import { csrfHeader } from "./api";

/** What the New job page hears from one upload. */
export interface UploadEvents {
  onProgress(sent: number, total: number): void;
  /** The connection dropped; the upload goes on from the server's offset after `delayMs`. */
  onRetry(delayMs: number): void;
  onSuccess(uploadId: string): void;
  onError(message: string): void;
}

/** PATCH size: each request counts once against the dashboard's request budget; a drop loses at most one chunk. */
const CHUNK_BYTES = 8 * 1024 * 1024;
/** Enough patience for a network drop of a couple of minutes; each retry resumes from the server's offset. */
const RETRY_DELAYS_MS = [0, 1_000, 2_000, 3_000, 5_000, 5_000, 10_000, 10_000, 20_000, 30_000, 30_000, 60_000];

/**
 * Uploads a file to `/uploads` with tus (docs/uploads.md), resumable: after a network drop it asks the server for its
 * offset and goes on from there, and a file picked again after a reload resumes the upload it started (tus-js-client
 * keeps the upload URL in localStorage). Cookie-authenticated writes carry the CSRF token like every dashboard write.
 */
export async function startUpload(file: File, events: UploadEvents): Promise<{ abort(): void }> {
  const csrf = await csrfHeader("PATCH", "/uploads");
  let attempt = 0;
  const upload = new Upload(file, {
    endpoint: "/uploads",
    chunkSize: CHUNK_BYTES,
    retryDelays: RETRY_DELAYS_MS,
    headers: csrf,
    metadata: { filename: file.name, filetype: file.type },
    removeFingerprintOnSuccess: true,
    onProgress: (sent, total) => events.onProgress(sent, total),
    onChunkComplete: () => {
      attempt = 0;
    },
    onShouldRetry: (error) => {
      const status = error.originalResponse?.getStatus() ?? 0;
      // Refusals (validation, too large, not allowed) are final; network drops and server trouble are retried.
      if (status >= 400 && status < 500 && status !== 409 && status !== 423 && status !== 429) return false;
      events.onRetry(RETRY_DELAYS_MS[Math.min(attempt, RETRY_DELAYS_MS.length - 1)]!);
      attempt += 1;
      return true;
    },
    onError: (error) => events.onError(messageOf(error)),
    onSuccess: () => {
      const url = upload.url ?? "";
      events.onSuccess(url.slice(url.lastIndexOf("/") + 1));
    },
  });
  const previous = await upload.findPreviousUploads();
  if (previous[0]) upload.resumeFromPreviousUpload(previous[0]);
  upload.start();
  return { abort: () => void upload.abort() };
}

function messageOf(error: Error): string {
  const body = (error as { originalResponse?: { getBody(): string } | null }).originalResponse?.getBody();
  try {
    const parsed = JSON.parse(body ?? "") as { error?: { message?: string } };
    if (parsed.error?.message) return parsed.error.message;
  } catch {
    // not our JSON error body
  }
  return "The upload failed; check your connection and try again.";
}
