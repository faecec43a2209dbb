import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { buffer, text } from "node:stream/consumers";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ObjectTooLargeError, type ObjectStore } from "./object-store.js";

/**
 * The behaviour every ObjectStore shares, run by each implementation's test file against a fresh store
 * (`makeStore` gives a new, empty one each call).
 */
export function objectStoreContract(makeStore: () => Promise<ObjectStore> | ObjectStore): void {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(path.join(tmpdir(), "rb-store-contract-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("stores a file and opens it with its size and content type", async () => {
    const store = await makeStore();
    const source = path.join(dir, "source.txt");
    await writeFile(source, "hello output");
    expect(await store.put("org_1/job_1/output.txt", source, "text/plain")).toEqual({ size: 12 });
    const opened = await store.open("org_1/job_1/output.txt");
    expect(opened?.size).toBe(12);
    expect(opened?.contentType).toBe("text/plain");
    expect(await text(opened!.stream)).toBe("hello output");
    expect(await store.head("org_1/job_1/output.txt")).toMatchObject({ size: 12, contentType: "text/plain", storedAt: expect.any(Number) });
  });

  it("stores a stream of several megabytes byte for byte", async () => {
    const store = await makeStore();
    // Larger than one multipart part (5 MiB), with a pattern that shows a dropped or reordered chunk.
    const bytes = Buffer.alloc(11 * 1024 * 1024 + 7);
    for (let index = 0; index < bytes.length; index++) bytes[index] = (index * 31 + (index >> 16)) & 0xff;
    const chunks = Array.from({ length: Math.ceil(bytes.length / 65_536) }, (_, index) => bytes.subarray(index * 65_536, (index + 1) * 65_536));
    expect(await store.putStream("org_1/upload_1/data.bin", Readable.from(chunks), "application/octet-stream")).toEqual({ size: bytes.length });
    const opened = await store.open("org_1/upload_1/data.bin");
    expect(opened?.size).toBe(bytes.length);
    expect((await buffer(opened!.stream)).equals(bytes)).toBe(true);
  });

  it("replaces an object put again under the same key", async () => {
    const store = await makeStore();
    await store.putStream("org_1/job_2/output.txt", Readable.from([Buffer.from("first")]), "text/plain");
    await store.putStream("org_1/job_2/output.txt", Readable.from([Buffer.from("second!")]), "application/json");
    const opened = await store.open("org_1/job_2/output.txt");
    expect(opened?.contentType).toBe("application/json");
    expect(await text(opened!.stream)).toBe("second!");
  });

  it("refuses a stream longer than maxBytes and stores nothing", async () => {
    const store = await makeStore();
    const chunks = Array.from({ length: 20 }, () => Buffer.alloc(1024, 7));
    await expect(store.putStream("org_1/upload_2/big.bin", Readable.from(chunks), "application/octet-stream", { maxBytes: 10_000 })).rejects.toBeInstanceOf(ObjectTooLargeError);
    expect(await store.head("org_1/upload_2/big.bin")).toBeUndefined();
    expect(await store.putStream("org_1/upload_2/fits.bin", Readable.from(chunks.slice(0, 2)), "application/octet-stream", { maxBytes: 2048 })).toEqual({ size: 2048 });
  });

  it("stores nothing when the stream fails midway", async () => {
    const store = await makeStore();
    async function* broken() {
      yield Buffer.alloc(1024, 1);
      throw new Error("connection reset");
    }
    await expect(store.putStream("org_1/upload_3/cut.bin", Readable.from(broken()), "application/octet-stream")).rejects.toThrow(/connection reset/);
    expect(await store.open("org_1/upload_3/cut.bin")).toBeUndefined();
  });

  it("returns undefined for a missing key and deletes idempotently", async () => {
    const store = await makeStore();
    expect(await store.open("org_1/job_404/output.mp4")).toBeUndefined();
    expect(await store.head("org_1/job_404/output.mp4")).toBeUndefined();
    await store.putStream("org_1/job_3/output.txt", Readable.from([Buffer.from("x")]), "text/plain");
    await store.delete("org_1/job_3/output.txt");
    await store.delete("org_1/job_3/output.txt");
    expect(await store.open("org_1/job_3/output.txt")).toBeUndefined();
  });

  it("refuses unsafe keys on every call", async () => {
    const store = await makeStore();
    for (const key of ["../secret.txt", "org_1/../../secret.txt", "/etc/passwd", "a//b", ""]) {
      expect(await store.open(key)).toBeUndefined();
      expect(await store.head(key)).toBeUndefined();
      await expect(store.putStream(key, Readable.from([Buffer.from("x")]), "text/plain")).rejects.toThrow(/unsafe object key/);
      await expect(store.delete(key)).rejects.toThrow(/unsafe object key/);
    }
  });

  it("deletes objects stored before the retention cut-off and keeps newer ones", async () => {
    const store = await makeStore();
    await store.putStream("org_1/job_old/output.txt", Readable.from([Buffer.from("old")]), "text/plain");
    // S3 keeps LastModified to the second: the cut-off falls a whole second after the old object.
    await new Promise((resolve) => setTimeout(resolve, 2_100));
    const cutoff = Date.now() - 1_000;
    await store.putStream("org_1/job_new/output.txt", Readable.from([Buffer.from("new")]), "text/plain");
    expect(await store.deleteStoredBefore(cutoff)).toBe(1);
    expect(await store.head("org_1/job_old/output.txt")).toBeUndefined();
    expect(await store.head("org_1/job_new/output.txt")).toBeDefined();
  });
}
