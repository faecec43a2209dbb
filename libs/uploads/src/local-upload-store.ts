import { copyFile, readdir, readFile, rm, writeFile } from "node:fs/promises";
import path from "node:path";
import { FileStore } from "@tus/file-store";
import { createTusUploadStore, KEPT_SUFFIX, keptUntilOf } from "./tus-upload-store.js";
import type { UploadStore } from "./upload-store.js";

/** `@tus/file-store` that also drops an upload's "kept until" mark when the upload goes (a client's tus DELETE). */
class MarkedFileStore extends FileStore {
  constructor(
    options: ConstructorParameters<typeof FileStore>[0],
    private readonly markOf: (id: string) => string,
  ) {
    super(options);
  }

  override async remove(id: string): Promise<void> {
    await super.remove(id);
    await rm(this.markOf(id), { force: true });
  }
}

/**
 * Uploads on the local disk (`@tus/file-store`): the bytes in `<directory>/<id>`, tus' record in `<directory>/<id>.json`,
 * the "kept until" mark of an upload a job named in `<directory>/<id>.kept`. The gateway writes, the worker reads, so
 * in local mode both are given the same directory (UPLOAD_DIR).
 */
export function createLocalUploadStore(options: { directory: string; retentionMs: number }): UploadStore {
  const directory = path.resolve(options.directory);
  const markOf = (id: string) => path.join(directory, `${id}${KEPT_SUFFIX}`);
  const dataStore = new MarkedFileStore({ directory, expirationPeriodInMilliseconds: options.retentionMs }, markOf);
  return createTusUploadStore({
    dataStore,
    retentionMs: options.retentionMs,
    listIds: async () => (await dataStore.configstore.list?.()) ?? [],
    // A plain file copy (a reflink where the file system has them) rather than a stream.
    copyTo: (id, destination) => copyFile(path.join(directory, id), destination),
    readMark: async (id) =>
      keptUntilOf(
        await readFile(markOf(id), "utf8").catch((error: NodeJS.ErrnoException) => {
          if (error.code === "ENOENT") return undefined;
          throw error;
        }),
      ),
    writeMark: (id, until) => writeFile(markOf(id), String(until)),
    removeMark: (id) => rm(markOf(id), { force: true }),
    listMarks: async () => (await readdir(directory)).filter((name) => name.endsWith(KEPT_SUFFIX)).map((name) => name.slice(0, -KEPT_SUFFIX.length)),
  });
}
