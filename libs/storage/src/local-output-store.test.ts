import { mkdtemp, readdir, readFile, rm, utimes, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { text } from "node:stream/consumers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createLocalOutputStore } from "./local-output-store.js";
import { isSafeOutputKey } from "./output-store.js";

let dir: string;
beforeAll(async () => { dir = await mkdtemp(path.join(tmpdir(), "rb-store-")); });
afterAll(async () => { await rm(dir, { recursive: true, force: true }); });

describe("local output store", () => {
  it("stores a file and opens it with its size and content type", async () => {
    const store = createLocalOutputStore(path.join(dir, "outputs"));
    const source = path.join(dir, "source.txt");
    await writeFile(source, "hello output");
    expect(await store.put("org_1/job_1/output.txt", source, "text/plain")).toEqual({ size: 12 });
    const opened = await store.open("org_1/job_1/output.txt");
    expect(opened?.size).toBe(12);
    expect(opened?.contentType).toBe("text/plain");
    expect(await text(opened!.stream)).toBe("hello output");
  });

  it("returns undefined for a missing key", async () => {
    const store = createLocalOutputStore(path.join(dir, "outputs"));
    expect(await store.open("org_1/job_404/output.mp4")).toBeUndefined();
  });

  it("refuses keys that would escape the directory", async () => {
    const store = createLocalOutputStore(path.join(dir, "outputs"));
    await writeFile(path.join(dir, "secret.txt"), "secret");
    expect(await store.open("../secret.txt")).toBeUndefined();
    expect(await store.open("org_1/../../secret.txt")).toBeUndefined();
    expect(await store.open("/etc/passwd")).toBeUndefined();
    await expect(store.put("../escape.txt", path.join(dir, "secret.txt"), "text/plain")).rejects.toThrow(/unsafe output key/);
    await expect(readFile(path.join(dir, "escape.txt"))).rejects.toThrow();
  });

  it("deletes outputs older than the retention period and keeps newer ones", async () => {
    const store = createLocalOutputStore(path.join(dir, "retention"));
    const source = path.join(dir, "retention-source.txt");
    await writeFile(source, "x");
    await store.put("org_1/job_old/output.txt", source, "text/plain");
    const cutoff = Date.now() + 1;
    await new Promise((resolve) => setTimeout(resolve, 20));
    await store.put("org_1/job_new/output.txt", source, "text/plain");
    await utimes(path.join(dir, "retention/org_1/job_old/output.txt"), new Date(cutoff - 10_000), new Date(cutoff - 10_000));
    expect(await store.deleteStoredBefore!(cutoff)).toBe(1);
    expect(await store.open("org_1/job_old/output.txt")).toBeUndefined();
    const kept = await store.open("org_1/job_new/output.txt");
    expect(kept).toBeDefined();
    kept?.stream.destroy();
    await expect(readdir(path.join(dir, "retention/org_1"))).resolves.toEqual(["job_new"]);
  });

  it("accepts only plain segment keys", () => {
    expect(isSafeOutputKey("org_01ABC/job_01DEF/output.mp4")).toBe(true);
    for (const key of ["", "..", "a/../b", "a//b", ".hidden", "a\\b", "a/b/", "%2e%2e/x", "a b"]) {
      expect(isSafeOutputKey(key)).toBe(false);
    }
  });
});
