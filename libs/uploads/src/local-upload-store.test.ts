import { mkdtemp, readFile, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { describe, expect, it } from "vitest";
import { Upload } from "@tus/utils";
import { newId } from "@renderbus/ids";
import { createLocalUploadStore } from "./local-upload-store.js";

const HOUR = 3_600_000;

async function storeWithUpload(bytes: string, declared = bytes.length) {
  const directory = await mkdtemp(path.join(tmpdir(), "rb-upload-store-"));
  const store = createLocalUploadStore({ directory, retentionMs: 24 * HOUR });
  const id = newId("upload");
  await store.dataStore.create(new Upload({ id, size: declared, offset: 0, metadata: { orgId: "org_a", filename: "clip.mp4" } }));
  await store.dataStore.write(Readable.from([Buffer.from(bytes)]), id, 0);
  return { directory, store, id };
}

describe("the local upload store", () => {
  it("describes an upload with its owner, offset, completeness and expiry", async () => {
    const { store, id } = await storeWithUpload("abcd", 10);
    const upload = await store.describe(id);
    expect(upload).toMatchObject({ id, orgId: "org_a", size: 10, offset: 4, complete: false, filename: "clip.mp4" });
    expect(upload!.expiresAt - upload!.createdAt).toBe(24 * HOUR);
  });

  it("copies a finished upload's bytes", async () => {
    const { directory, store, id } = await storeWithUpload("0123456789");
    const destination = path.join(directory, "copy.bin");
    await store.copyTo(id, destination);
    expect(await readFile(destination, "utf8")).toBe("0123456789");
  });

  it("knows nothing of ids that are not upload ids, so no other file of the directory is reachable", async () => {
    const { store } = await storeWithUpload("x");
    for (const id of ["../etc/passwd", "upload_x", "job_01JBQ0000000000000000000AB", ""]) expect(await store.describe(id)).toBeUndefined();
    await expect(store.copyTo("../../etc/passwd", "/tmp/never")).rejects.toThrow();
  });

  it("deletes uploads past their retention, finished or not, and keeps younger ones", async () => {
    const { directory, store, id } = await storeWithUpload("done");
    expect(await store.deleteExpired(Date.now() + 23 * HOUR)).toBe(0);
    expect(await store.deleteExpired(Date.now() + 25 * HOUR)).toBe(1);
    expect(await store.describe(id)).toBeUndefined();
    expect(await readdir(directory)).toEqual([]);
  });
});
