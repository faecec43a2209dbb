import { Upload as TusUpload } from "tus-js-client";
import type { Transport } from "./transport.js";
import type { Upload } from "./types.js";

/**
 * What `client.uploads.upload()` sends: bytes in memory, a Blob/File (browsers), a file stream
 * (`fs.createReadStream(path)`: resumed by seeking the file) or any other readable stream (sent in `chunkSize` pieces;
 * give `size`, else the length is declared at the end).
 */
export type UploadSource = Uint8Array | Blob | NodeJS.ReadableStream;

export interface UploadFileOptions {
  /** Sent as the upload's file name (its extension helps the worker read subtitles). */
  filename?: string;
  /** The size in bytes of a stream that is not a file stream. */
  size?: number;
  /** Called as bytes reach the server: `sent` of `total` (total is null while a stream's size is unknown). */
  onProgress?: (sent: number, total: number | null) => void;
  signal?: AbortSignal;
  /** Bytes per PATCH request; each counts once against the rate limit. Default: the whole file (16 MiB for streams). */
  chunkSize?: number;
  /** Waits before the retries after a dropped connection; each retry resumes from the server's offset. */
  retryDelays?: number[];
}

const STREAM_CHUNK_BYTES = 16 * 1024 * 1024;
const DEFAULT_RETRY_DELAYS = [0, 1_000, 3_000, 5_000, 10_000, 20_000];

const isFileStream = (source: UploadSource): boolean => typeof (source as { path?: unknown }).path === "string";
const isStream = (source: UploadSource): boolean => typeof (source as NodeJS.ReadableStream).pipe === "function";

/**
 * Uploads `source` to `/uploads` with tus (tus-js-client): resumable, retried from the server's offset after a
 * dropped connection, and resolves with the complete upload, whose id is a job input (`inputs.source`).
 */
export function uploadFile(transport: Transport, get: (uploadId: string) => Promise<Upload>, source: UploadSource, options: UploadFileOptions = {}): Promise<Upload> {
  const stream = isStream(source) && !isFileStream(source);
  const file = source instanceof Uint8Array && !Buffer.isBuffer(source) ? Buffer.from(source.buffer, source.byteOffset, source.byteLength) : source;
  const { "user-agent": _userAgent, ...headers } = transport.headers();
  return new Promise<Upload>((resolve, reject) => {
    const upload = new TusUpload(file as ConstructorParameters<typeof TusUpload>[0], {
      endpoint: transport.url("/uploads"),
      headers,
      metadata: options.filename ? { filename: options.filename } : {},
      retryDelays: options.retryDelays ?? DEFAULT_RETRY_DELAYS,
      ...(options.chunkSize ? { chunkSize: options.chunkSize } : stream ? { chunkSize: STREAM_CHUNK_BYTES } : {}),
      ...(options.size !== undefined ? { uploadSize: options.size } : stream ? { uploadLengthDeferred: true } : {}),
      onProgress: (sent, total) => options.onProgress?.(sent, total > 0 ? total : null),
      onError: (error) => reject(error),
      onSuccess: () => {
        const id = upload.url?.slice(upload.url.lastIndexOf("/") + 1);
        if (!id) return reject(new Error("the server answered no upload URL"));
        get(id).then(resolve, reject);
      },
    });
    options.signal?.addEventListener("abort", () => {
      void upload.abort();
      reject(options.signal!.reason ?? new Error("upload aborted"));
    }, { once: true });
    upload.start();
  });
}
