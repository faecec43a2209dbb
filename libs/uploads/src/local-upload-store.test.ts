import { mkdtemp, readdir } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { createLocalUploadStore } from "./local-upload-store.js";
import { uploadStoreContract } from "./upload-store-contract.js";

describe("the local upload store", () => {
  uploadStoreContract(async (retentionMs) => createLocalUploadStore({ directory: await mkdtemp(path.join(tmpdir(), "rb-upload-store-")), retentionMs }));

  it("leaves nothing behind in its directory once uploads expire", async () => {
    const directory = await mkdtemp(path.join(tmpdir(), "rb-upload-store-"));
    const store = createLocalUploadStore({ directory, retentionMs: 3_600_000 });
    await store.createComplete({ orgId: "org_a", bytes: Buffer.from("x") });
    expect(await store.deleteExpired(Date.now() + 2 * 3_600_000)).toBe(1);
    expect(await readdir(directory)).toEqual([]);
  });
});
