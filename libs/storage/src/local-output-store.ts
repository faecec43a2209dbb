import { createReadStream } from "node:fs";
import { copyFile, mkdir, readdir, readFile, rename, rm, rmdir, stat, writeFile } from "node:fs/promises";
import path from "node:path";
import { isSafeOutputKey, type OutputStore } from "./output-store.js";

const META_SUFFIX = ".meta.json";

/**
 * An OutputStore over a local directory (shared by the worker and the gateway on one machine or a shared volume).
 * The content type is kept in a sidecar `<key>.meta.json`. Writes go to a temp name and are renamed into place,
 * so a reader never sees half a file.
 */
export function createLocalOutputStore(dir: string): OutputStore {
  const root = path.resolve(dir);

  function pathOf(key: string): string {
    if (!isSafeOutputKey(key)) throw new Error(`unsafe output key: ${JSON.stringify(key)}`);
    const resolved = path.resolve(root, key);
    // Belt and braces: the key check already forbids traversal.
    if (!resolved.startsWith(root + path.sep)) throw new Error(`unsafe output key: ${JSON.stringify(key)}`);
    return resolved;
  }

  return {
    async put(key, filePath, contentType) {
      const target = pathOf(key);
      await mkdir(path.dirname(target), { recursive: true });
      const temp = `${target}.${process.pid}.${Date.now()}.tmp`;
      await copyFile(filePath, temp);
      await writeFile(`${target}${META_SUFFIX}`, JSON.stringify({ contentType }));
      await rename(temp, target);
      const { size } = await stat(target);
      return { size };
    },

    async open(key) {
      if (!isSafeOutputKey(key) || key.endsWith(META_SUFFIX)) return undefined;
      const target = pathOf(key);
      try {
        const info = await stat(target);
        if (!info.isFile()) return undefined;
        const meta = JSON.parse(await readFile(`${target}${META_SUFFIX}`, "utf8")) as { contentType?: string };
        return { stream: createReadStream(target), size: info.size, contentType: meta.contentType ?? "application/octet-stream" };
      } catch (error) {
        if ((error as NodeJS.ErrnoException).code === "ENOENT") return undefined;
        throw error;
      }
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
          } else if (!entry.name.endsWith(META_SUFFIX) && !entry.name.endsWith(".tmp")) {
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
  };
}
