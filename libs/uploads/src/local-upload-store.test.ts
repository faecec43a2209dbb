import { mkdtemp, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { newId } from "@renderbus/ids";
import { createLocalUploadStore } from "./local-upload-store.js";
import { uploadStoreContract } from "./upload-store-contract.js";

describe("the local upload store", () => {
  uploadStoreContract(async (retentionMs) => createLocalUploadStore({ directory: await mkdtemp(path.join(tmpdir(), "rb-upload-store-")), retentionMs }));

  it("leaves nothing behind in its directory once uploads expire, their marks and marks without an upload included", async () => {
    const directory = await mkdtemp(path.join(tmpdir(), "rb-upload-store-"));
    const store = createLocalUploadStore({ directory, retentionMs: 3_600_000 });
    const kept = await store.createComplete({ orgId: "org_a", bytes: Buffer.from("x") });
    await store.keepUntil(kept.id, Date.now() + 3 * 3_600_000);
    // A job named an upload as the sweep took it: the mark outlives its upload.
    await store.keepUntil(newId("upload"), Date.now() + 3_600_000);
    expect(await store.deleteExpired(Date.now() + 2 * 3_600_000)).toBe(0);
    expect((await readdir(directory)).filter((name) => name.endsWith(".kept"))).toHaveLength(1);
    expect(await store.deleteExpired(Date.now() + 4 * 3_600_000)).toBe(1);
    expect(await readdir(directory)).toEqual([]);
  });

  it("keeps an upload when its store fails to answer for it, mark and all, and says so instead of calling it gone", async () => {
    const directory = await mkdtemp(path.join(tmpdir(), "rb-upload-store-"));
    const store = createLocalUploadStore({ directory, retentionMs: 3_600_000 });
    const kept = await store.createComplete({ orgId: "org_a", bytes: Buffer.from("x") });
    await store.keepUntil(kept.id, Date.now() + 7 * 24 * 3_600_000);
    const getUpload = store.dataStore.getUpload.bind(store.dataStore);
    store.dataStore.getUpload = () => Promise.reject(Object.assign(new Error("SlowDown"), { status_code: 503 }));
    await expect(store.describe(kept.id)).rejects.toThrow(/SlowDown/);
    expect(await store.deleteExpired(Date.now() + 2 * 3_600_000)).toBe(0);
    store.dataStore.getUpload = getUpload;
    expect(await store.describe(kept.id)).toMatchObject({ complete: true, expiresAt: expect.any(Number) });
    expect((await store.describe(kept.id))!.expiresAt).toBeGreaterThan(Date.now() + 6 * 24 * 3_600_000);
  });
});
