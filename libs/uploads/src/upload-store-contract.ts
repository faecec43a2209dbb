import { randomBytes } from "node:crypto";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, expect, it } from "vitest";
import { Upload } from "@tus/utils";
import { newId } from "@renderbus/ids";
import type { UploadStore } from "./upload-store.js";

const HOUR = 3_600_000;
const MiB = 1024 * 1024;

/**
 * The behaviour every UploadStore shares (docs/uploads.md), run by each implementation's test file against a fresh
 * store (`makeStore(retentionMs)` gives a new, empty one each call).
 */
export function uploadStoreContract(makeStore: (retentionMs: number) => Promise<UploadStore> | UploadStore): void {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "rb-upload-contract-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  /** What `@tus/server` does on a POST: an upload record owned by org_a, then PATCH bodies through write(). */
  async function started(store: UploadStore, size: number | undefined) {
    const id = newId("upload");
    await store.dataStore.create(new Upload({ id, size, offset: 0, metadata: { orgId: "org_a", filename: "clip.mp4" } }));
    return id;
  }

  it("describes an upload with its owner, offset, completeness and expiry", async () => {
    const store = await makeStore(24 * HOUR);
    const id = await started(store, 10);
    expect(await store.dataStore.write(Readable.from([Buffer.from("abcd")]), id, 0)).toBe(4);
    const upload = await store.describe(id);
    expect(upload).toMatchObject({ id, orgId: "org_a", size: 10, offset: 4, complete: false, filename: "clip.mp4" });
    expect(upload!.expiresAt - upload!.createdAt).toBe(24 * HOUR);
    expect(Math.abs(upload!.createdAt - Date.now())).toBeLessThan(HOUR);
  });

  it("resumes from the offset it reports, across requests larger than a part, and copies the finished bytes", async () => {
    const store = await makeStore(24 * HOUR);
    const bytes = randomBytes(13 * MiB + 123);
    const id = await started(store, bytes.length);
    // A first request cut after 7 MiB (as a dropped connection leaves it), then the rest from the reported offset.
    expect(await store.dataStore.write(Readable.from([bytes.subarray(0, 7 * MiB)]), id, 0)).toBe(7 * MiB);
    const resumed = await store.describe(id);
    expect(resumed).toMatchObject({ offset: 7 * MiB, complete: false });
    expect(await store.dataStore.write(Readable.from([bytes.subarray(resumed!.offset)]), id, resumed!.offset)).toBe(bytes.length);
    expect(await store.describe(id)).toMatchObject({ offset: bytes.length, size: bytes.length, complete: true });
    const destination = path.join(dir, `${id}.bin`);
    await store.copyTo(id, destination);
    expect((await readFile(destination)).equals(bytes)).toBe(true);
  });

  it("takes the length later when the client deferred it", async () => {
    const store = await makeStore(24 * HOUR);
    const id = await started(store, undefined);
    expect(await store.describe(id)).toMatchObject({ size: null, complete: false });
    await store.dataStore.declareUploadLength(id, 3);
    await store.dataStore.write(Readable.from([Buffer.from("xyz")]), id, 0);
    expect(await store.describe(id)).toMatchObject({ size: 3, offset: 3, complete: true });
  });

  it("creates empty and complete uploads without a tus request", async () => {
    const store = await makeStore(24 * HOUR);
    const empty = await store.create({ orgId: "org_b", size: 5, filename: "a.mov" });
    expect(empty).toMatchObject({ orgId: "org_b", size: 5, offset: 0, complete: false, filename: "a.mov" });
    const inline = await store.createComplete({ orgId: "org_b", bytes: Buffer.from("inline bytes") });
    expect(inline).toMatchObject({ orgId: "org_b", size: 12, offset: 12, complete: true, filename: null });
    await store.copyTo(inline.id, path.join(dir, "inline.bin"));
    expect(await readFile(path.join(dir, "inline.bin"), "utf8")).toBe("inline bytes");
    expect(await store.createComplete({ orgId: "org_b", bytes: Buffer.alloc(0) })).toMatchObject({ size: 0, offset: 0, complete: true });
  });

  it("knows nothing of ids that are not upload ids, so no other object of the store is reachable", async () => {
    const store = await makeStore(24 * HOUR);
    await started(store, 1);
    for (const id of ["../etc/passwd", "upload_x", "job_01JBQ0000000000000000000AB", "", newId("upload")]) expect(await store.describe(id)).toBeUndefined();
    await expect(store.copyTo("../../etc/passwd", path.join(dir, "never"))).rejects.toThrow();
    await expect(store.copyTo(newId("upload"), path.join(dir, "never"))).rejects.toThrow();
  });

  it("deletes an upload on request (tus termination)", async () => {
    const store = await makeStore(24 * HOUR);
    const id = await started(store, 4);
    await store.dataStore.write(Readable.from([Buffer.from("ab")]), id, 0);
    await store.dataStore.remove(id);
    expect(await store.describe(id)).toBeUndefined();
  });

  it("keeps an upload a job named past its retention, until its mark, never shorter, then deletes it and its mark", async () => {
    const store = await makeStore(24 * HOUR);
    const used = await store.createComplete({ orgId: "org_a", bytes: Buffer.from("used") });
    const unused = (await store.createComplete({ orgId: "org_a", bytes: Buffer.from("unused") })).id;
    const keptUntil = used.createdAt + 7 * 24 * HOUR;
    await store.keepUntil(used.id, keptUntil);
    await store.keepUntil(used.id, used.createdAt + 48 * HOUR); // a later, shorter use does not shorten it
    expect((await store.describe(used.id))!.expiresAt).toBe(keptUntil);
    expect((await store.describe(unused))!.expiresAt).toBe((await store.describe(unused))!.createdAt + 24 * HOUR);
    expect(await store.deleteExpired(used.createdAt + 25 * HOUR)).toBe(1);
    expect(await store.describe(unused)).toBeUndefined();
    expect(await store.describe(used.id)).toMatchObject({ complete: true, expiresAt: keptUntil });
    expect(await store.deleteExpired(keptUntil + 1)).toBe(1);
    expect(await store.describe(used.id)).toBeUndefined();
    await expect(store.keepUntil("../etc/passwd", keptUntil)).rejects.toThrow();
  });

  it("forgets an upload's mark with the upload when a client deletes it", async () => {
    const store = await makeStore(24 * HOUR);
    const id = await started(store, 4);
    await store.keepUntil(id, Date.now() + 7 * 24 * HOUR);
    await store.dataStore.remove(id);
    expect(await store.describe(id)).toBeUndefined();
    // Made again under the same id (only a test can), it has its own retention, not the old mark.
    await store.dataStore.create(new Upload({ id, size: 1, offset: 0, metadata: { orgId: "org_a" } }));
    const again = await store.describe(id);
    expect(again!.expiresAt - again!.createdAt).toBe(24 * HOUR);
  });

  it("deletes uploads past their retention, finished or not, and keeps younger ones", async () => {
    const store = await makeStore(24 * HOUR);
    const done = (await store.createComplete({ orgId: "org_a", bytes: Buffer.from("done") })).id;
    const partial = await started(store, 10);
    await store.dataStore.write(Readable.from([Buffer.from("part")]), partial, 0);
    expect(await store.deleteExpired(Date.now() + 23 * HOUR)).toBe(0);
    expect(await store.deleteExpired(Date.now() + 25 * HOUR)).toBe(2);
    expect(await store.describe(done)).toBeUndefined();
    expect(await store.describe(partial)).toBeUndefined();
    expect(await store.deleteExpired(Date.now() + 25 * HOUR)).toBe(0);
  });
}
