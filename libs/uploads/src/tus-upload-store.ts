import { createWriteStream } from "node:fs";
import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import { Upload, type DataStore } from "@tus/utils";
import { isId, newId, timeOfId } from "@renderbus/ids";
import { UPLOAD_ORG_METADATA, type UploadDescription, type UploadStore } from "./upload-store.js";

/** Beside an upload's objects, the mark saying how long a job needs it kept (epoch ms, as text). */
export const KEPT_SUFFIX = ".kept";

/** A mark's text as epoch ms; anything else (an empty or garbled mark) as no mark. */
export function keptUntilOf(text: string | undefined): number | undefined {
  if (text === undefined || !/^\d{1,15}$/.test(text.trim())) return undefined;
  return Number(text.trim());
}

/** A tus data store that also reads an upload back (both `@tus/file-store` and `@tus/s3-store` do). */
export type ReadableDataStore = DataStore & { read(id: string): Readable | Promise<Readable> };

/** What differs between the stores behind {@link createTusUploadStore}. */
export interface TusUploadStoreParts {
  /** The tus data store the gateway's `@tus/server` writes through, and the worker reads from. */
  dataStore: ReadableDataStore;
  retentionMs: number;
  /** Every upload id the store holds (for the retention sweep). */
  listIds(): Promise<string[]>;
  /**
   * The "kept until" marks of uploads jobs named, beside the uploads (never in tus' own record, whose metadata a
   * client writes at creation). `readMark` answers undefined without one; `removeMark` ignores a missing one.
   */
  readMark(id: string): Promise<number | undefined>;
  writeMark(id: string, until: number): Promise<void>;
  removeMark(id: string): Promise<void>;
  /** The ids of every mark (the sweep drops those whose upload is gone). */
  listMarks(): Promise<string[]>;
  /** Copies a finished upload to a local file; default: a stream of `dataStore.read(id)` into it. */
  copyTo?(id: string, destination: string): Promise<void>;
}

/**
 * An UploadStore over any tus data store (`@tus/file-store` on disk, `@tus/s3-store` in a bucket): what an upload is
 * (owner, offset, completeness, expiry), how one is created without a tus request, how the worker reads one and how
 * old ones go. Only well-formed upload ids ever reach the data store: no `..`, no other object of the directory or
 * bucket.
 */
export function createTusUploadStore(parts: TusUploadStoreParts): UploadStore {
  const { dataStore, retentionMs } = parts;
  const describe = async (id: string): Promise<UploadDescription | undefined> => {
    if (!isId("upload", id)) return undefined;
    let upload: Upload;
    try {
      upload = await dataStore.getUpload(id);
    } catch (error) {
      // Only "there is none" means none: a store that failed to answer (S3 slowing down, a timeout) is an error, or
      // the sweep would take a kept upload for a lost record and delete it.
      if (isNotFound(error)) return undefined;
      throw error;
    }
    const orgId = upload.metadata?.[UPLOAD_ORG_METADATA];
    if (!orgId) return undefined;
    const createdAt = upload.creation_date ? Date.parse(upload.creation_date) : timeOfId(id);
    const size = upload.size ?? null;
    const keptUntil = await parts.readMark(id);
    return {
      id,
      orgId,
      size,
      offset: upload.offset,
      complete: size !== null && upload.offset === size,
      createdAt,
      expiresAt: Math.max(createdAt + retentionMs, keptUntil ?? 0),
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
    retentionMs,
    describe,
    create,
    createComplete: async ({ orgId, bytes, filename }) => {
      const upload = await create({ orgId, size: bytes.length, ...(filename ? { filename } : {}) });
      // An empty upload is complete as created; a store may still need the write to finish it (S3: the object).
      await dataStore.write(Readable.from(bytes.length > 0 ? [bytes] : []), upload.id, 0);
      return (await describe(upload.id))!;
    },
    copyTo: async (id, destination) => {
      if (!isId("upload", id)) throw new Error(`${id} is not an upload id`);
      if (parts.copyTo) return parts.copyTo(id, destination);
      await pipeline(await dataStore.read(id), createWriteStream(destination));
    },
    keepUntil: async (id, until) => {
      if (!isId("upload", id)) throw new Error(`${id} is not an upload id`);
      const kept = await parts.readMark(id);
      if (kept === undefined || kept < until) await parts.writeMark(id, until);
    },
    deleteExpired: async (now = Date.now()) => {
      // tus' own deleteExpired keeps finished uploads forever; ours end with their retention either way. An upload
      // the store could not answer for is left to the next sweep, its mark with it.
      let deleted = 0;
      const ids = await parts.listIds();
      for (const id of ids) {
        if (!isId("upload", id)) continue;
        try {
          // Without a record of its own (a half-created upload), its id's time and its mark say how old it is.
          const expiresAt = (await describe(id))?.expiresAt ?? Math.max(timeOfId(id) + retentionMs, (await parts.readMark(id)) ?? 0);
          if (expiresAt > now) continue;
          try {
            await dataStore.remove(id);
            deleted += 1;
          } catch (error) {
            if (!isNotFound(error)) throw error; // else removed meanwhile (another replica's sweep, a client's DELETE)
          }
          await parts.removeMark(id);
        } catch {
          // The store failed to answer for this one: the next sweep tries again.
        }
      }
      // Marks whose upload is gone (a job named it as it expired) go once they have passed.
      const present = new Set(ids);
      for (const id of await parts.listMarks()) {
        if (present.has(id) || !isId("upload", id)) continue;
        const until = await parts.readMark(id).catch(() => undefined);
        if (until === undefined || until <= now) await parts.removeMark(id).catch(() => undefined);
      }
      return deleted;
    },
  };
}

/** tus' "no such upload" (`ERRORS.FILE_NOT_FOUND`, or a 410 for one that expired), as both stores throw it. */
function isNotFound(error: unknown): boolean {
  const status = (error as { status_code?: number } | null)?.status_code;
  return status === 404 || status === 410;
}
