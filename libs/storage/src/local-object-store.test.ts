import { mkdtemp, readdir, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLocalObjectStore } from "./local-object-store.js";
import { objectStoreContract } from "./object-store-contract.js";
import { isSafeObjectKey } from "./object-store.js";

let dir: string;
let stores = 0;
beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "rb-store-"));
});
afterAll(async () => {
  await rm(dir, { recursive: true, force: true });
});

describe("local object store", () => {
  objectStoreContract(() => createLocalObjectStore(path.join(dir, `store-${++stores}`)));

  it("never reads or writes outside its directory", async () => {
    const store = createLocalObjectStore(path.join(dir, "outputs"));
    await writeFile(path.join(dir, "secret.txt"), "secret");
    expect(await store.open("../secret.txt")).toBeUndefined();
    await expect(store.put("../escape.txt", path.join(dir, "secret.txt"), "text/plain")).rejects.toThrow(/unsafe object key/);
    await expect(readFile(path.join(dir, "escape.txt"))).rejects.toThrow();
  });

  it("keeps its sidecar and temp names out of reach, and no temp file after a put", async () => {
    const store = createLocalObjectStore(path.join(dir, "sidecars"));
    await store.putStream("org_1/job_1/output.txt", Readable.from([Buffer.from("x")]), "text/plain");
    expect(await store.open("org_1/job_1/output.txt.meta.json")).toBeUndefined();
    await expect(store.putStream("org_1/job_1/output.txt.meta.json", Readable.from([Buffer.from("{}")]), "text/plain")).rejects.toThrow(/unsafe object key/);
    await expect(store.putStream("org_1/job_1/x.tmp", Readable.from([Buffer.from("{}")]), "text/plain")).rejects.toThrow(/unsafe object key/);
    expect((await readdir(path.join(dir, "sidecars/org_1/job_1"))).sort()).toEqual(["output.txt", "output.txt.meta.json"]);
  });

  it("has no presigned URLs: the gateway streams its files", async () => {
    expect(await createLocalObjectStore(dir).presignedDownloadUrl("org_1/job_1/output.txt", { expiresInSeconds: 60 })).toBeUndefined();
  });

  it("accepts only plain segment keys", () => {
    expect(isSafeObjectKey("org_01ABC/job_01DEF/output.mp4")).toBe(true);
    for (const key of ["", "..", "a/../b", "a//b", ".hidden", "a\\b", "a/b/", "%2e%2e/x", "a b"]) {
      expect(isSafeObjectKey(key)).toBe(false);
    }
  });
});
