import { randomUUID } from "node:crypto";
import { createReadStream, createWriteStream } from "node:fs";
import { copyFile, mkdir, readdir, readFile, rename, rm, rmdir, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { pipeline } from "node:stream/promises";
import { countingLimit } from "./byte-limit.js";
import { isSafeObjectKey, UnsafeObjectKeyError, type ObjectInfo, type ObjectStore } from "./object-store.js";

const META_SUFFIX = ".meta.json";
const TEMP_SUFFIX = ".tmp";

/**
 * An ObjectStore over a local directory (shared by the worker and the gateway on one machine or a shared volume).
 * The content type is kept in a sidecar `<key>.meta.json`. Writes go to a temp name and are renamed into place,
 * so a reader never sees half a file. It has no presigned URLs: the gateway streams its files.
 */
export function createLocalObjectStore(dir: string): ObjectStore {
  const root = path.resolve(dir);

  /** Whether `key` names an object here: safe, and not one of the store's own sidecar or temp names. */
  const isObjectKey = (key: string) => isSafeObjectKey(key) && !key.endsWith(META_SUFFIX) && !key.endsWith(TEMP_SUFFIX);

  function pathOf(key: string): string {
    if (!isObjectKey(key)) throw new UnsafeObjectKeyError(key);
    const resolved = path.resolve(root, key);
    // Belt and braces: the key check already forbids traversal.
    if (!resolved.startsWith(root + path.sep)) throw new UnsafeObjectKeyError(key);
    return resolved;
  }

  /** Writes a file into place under `key` via a temp name; `write` fills the temp file. */
  async function writeInPlace(key: string, contentType: string, write: (temp: string) => Promise<void>): Promise<{ size: number }> {
    const target = pathOf(key);
    await mkdir(path.dirname(target), { recursive: true });
    const temp = `${target}.${process.pid}.${randomUUID()}${TEMP_SUFFIX}`;
    try {
      await write(temp);
      await writeFile(`${target}${META_SUFFIX}`, JSON.stringify({ contentType }));
      await rename(temp, target);
    } catch (error) {
      await rm(temp, { force: true });
      throw error;
    }
    const { size } = await stat(target);
    return { size };
  }

  async function infoOf(key: string): Promise<(ObjectInfo & { path: string }) | undefined> {
    if (!isObjectKey(key)) return undefined;
    const target = pathOf(key);
    try {
      const info = await stat(target);
      if (!info.isFile()) return undefined;
      const meta = JSON.parse(await readFile(`${target}${META_SUFFIX}`, "utf8")) as { contentType?: string };
      return { path: target, size: info.size, contentType: meta.contentType ?? "application/octet-stream", storedAt: info.mtimeMs };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
      throw error;
    }
  }

  return {
    kind: "local",

    put: (key, filePath, contentType) => writeInPlace(key, contentType, (temp) => copyFile(filePath, temp)),

    putStream: (key, body, contentType, options) =>
      writeInPlace(key, contentType, (temp) => pipeline(body, countingLimit(options?.maxBytes), createWriteStream(temp))),

    async open(key) {
      const info = await infoOf(key);
      if (!info) return undefined;
      return { stream: createReadStream(info.path), size: info.size, contentType: info.contentType };
    },

    async head(key) {
      const info = await infoOf(key);
      return info && { size: info.size, contentType: info.contentType, storedAt: info.storedAt };
    },

    async delete(key) {
      const target = pathOf(key);
      await rm(target, { force: true });
      await rm(`${target}${META_SUFFIX}`, { force: true });
    },

    async deleteStoredBefore(before) {
      let deleted = 0;
      const sweep = async (directory: string): Promise<void> => {
        const entries = await readdir(directory, { withFileTypes: true }).catch(() => []);
        for (const entry of entries) {
          const entryPath = path.join(directory, entry.name);
          if (entry.isDirectory()) {
            await sweep(entryPath);
            // Only succeeds once the directory is empty, which is the point.
            await rmdir(entryPath).catch(() => undefined);
          } else if (!entry.name.endsWith(META_SUFFIX) && !entry.name.endsWith(TEMP_SUFFIX)) {
            const info = await stat(entryPath).catch(() => undefined);
            if (info && info.mtimeMs < before) {
              await rm(entryPath, { force: true });
              await rm(`${entryPath}${META_SUFFIX}`, { force: true });
              deleted++;
            }
          }
        }
      };
      await sweep(root);
      return deleted;
    },

    presignedDownloadUrl: async () => undefined,
  };
}
