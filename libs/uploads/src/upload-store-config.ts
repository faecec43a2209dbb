import type { StorageConfig } from "@renderbus/storage";
import { createLocalUploadStore } from "./local-upload-store.js";
import { createS3UploadStore } from "./s3-upload-store.js";
import type { UploadStore } from "./upload-store.js";

/**
 * The upload store from the configuration (docs/uploads.md): `localDir` (UPLOAD_DIR) with STORAGE=local, the
 * `uploads/` prefix of S3_BUCKET with STORAGE=s3 (outputs are under `outputs/` of the same bucket).
 */
export function createUploadStore(config: StorageConfig, { localDir, retentionMs }: { localDir: string; retentionMs: number }): UploadStore {
  if (config.STORAGE === "local") return createLocalUploadStore({ directory: localDir, retentionMs });
  return createS3UploadStore({
    bucket: config.S3_BUCKET!,
    prefix: "uploads/",
    endpoint: config.S3_ENDPOINT,
    region: config.S3_REGION,
    forcePathStyle: config.S3_FORCE_PATH_STYLE,
    credentials: config.S3_ACCESS_KEY_ID && config.S3_SECRET_ACCESS_KEY ? { accessKeyId: config.S3_ACCESS_KEY_ID, secretAccessKey: config.S3_SECRET_ACCESS_KEY } : undefined,
    retentionMs,
  });
}
