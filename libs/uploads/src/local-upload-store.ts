import { copyFile } from "node:fs/promises";
import path from "node:path";
import { FileStore } from "@tus/file-store";
import { createTusUploadStore } from "./tus-upload-store.js";
import type { UploadStore } from "./upload-store.js";

/**
 * Uploads on the local disk (`@tus/file-store`): the bytes in `<directory>/<id>`, tus' record in `<directory>/<id>.json`.
 * The gateway writes, the worker reads, so in local mode both are given the same directory (UPLOAD_DIR).
 */
export function createLocalUploadStore(options: { directory: string; retentionMs: number }): UploadStore {
  const directory = path.resolve(options.directory);
  const dataStore = new FileStore({ directory, expirationPeriodInMilliseconds: options.retentionMs });
  return createTusUploadStore({
    dataStore,
    retentionMs: options.retentionMs,
    listIds: async () => (await dataStore.configstore.list?.()) ?? [],
    // A plain file copy (a reflink where the file system has them) rather than a stream.
    copyTo: (id, destination) => copyFile(path.join(directory, id), destination),
  });
}
