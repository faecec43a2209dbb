import { copyFile } from "node:fs/promises";
import path from "node:path";
import { Readable } from "node:stream";
import { FileStore } from "@tus/file-store";
import { Upload } from "@tus/utils";
import { isId, newId, timeOfId } from "@renderbus/ids";
import { UPLOAD_ORG_METADATA, type UploadDescription, type UploadStore } from "./upload-store.js";

/**
 * Uploads on the local disk (`@tus/file-store`): the bytes in `<directory>/<id>`, tus' record in `<directory>/<id>.json`.
 * The gateway writes, the worker reads, so in local mode both are given the same directory (UPLOAD_DIR).
 */
export function createLocalUploadStore(options: { directory: string; retentionMs: number }): UploadStore {
  const directory = path.resolve(options.directory);
  const dataStore = new FileStore({ directory, expirationPeriodInMilliseconds: options.retentionMs });
  const describe = async (id: string): Promise<UploadDescription | undefined> => {
    // Only well-formed ids reach the file system: no `..`, no other files of the directory.
    if (!isId("upload", id)) return undefined;
    let upload: Upload;
    try {
      upload = await dataStore.getUpload(id);
    } catch {
      return undefined;
    }
    const orgId = upload.metadata?.[UPLOAD_ORG_METADATA];
    if (!orgId) return undefined;
    const createdAt = upload.creation_date ? Date.parse(upload.creation_date) : timeOfId(id);
    const size = upload.size ?? null;
    return {
      id,
      orgId,
      size,
      offset: upload.offset,
      complete: size !== null && upload.offset === size,
      createdAt,
      expiresAt: createdAt + options.retentionMs,
      filename: upload.metadata?.filename ?? null,
    };
  };
  const create = async ({ orgId, size, filename }: { orgId: string; size: number; filename?: string }): Promise<UploadDescription> => {
    const id = newId("upload");
    await dataStore.create(new Upload({ id, size, offset: 0, metadata: { ...(filename ? { filename } : {}), [UPLOAD_ORG_METADATA]: orgId } }));
    return (await describe(id))!;
  };
  return {
    dataStore,
    retentionMs: options.retentionMs,
    describe,
    create,
    createComplete: async ({ orgId, bytes, filename }) => {
      const upload = await create({ orgId, size: bytes.length, ...(filename ? { filename } : {}) });
      if (bytes.length > 0) await dataStore.write(Readable.from([bytes]), upload.id, 0);
      return (await describe(upload.id))!;
    },
    copyTo: async (id, destination) => {
      if (!isId("upload", id)) throw new Error(`${id} is not an upload id`);
      await copyFile(path.join(directory, id), destination);
    },
    deleteExpired: async (now = Date.now()) => {
      // tus' own deleteExpired keeps finished uploads forever; ours end with their retention either way.
      const ids = (await dataStore.configstore.list?.()) ?? [];
      let deleted = 0;
      for (const id of ids) {
        const upload = await describe(id);
        const createdAt = upload?.createdAt ?? (isId("upload", id) ? timeOfId(id) : undefined);
        if (createdAt === undefined || createdAt + options.retentionMs > now) continue;
        try {
          await dataStore.remove(id);
          deleted += 1;
        } catch {
          // removed meanwhile (another replica's sweep, a client's DELETE)
        }
      }
      return deleted;
    },
  };
}
