import { execFile } from "node:child_process";
import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { z } from "zod";
import { storageVariables } from "@renderbus/storage";
import { createUploadStore, type UploadStore } from "@renderbus/uploads";
import { createInputAgent, type InputAgent } from "../fetch-input/guarded-agent.js";
import { JobFailure } from "../job-failure.js";
import { downloadInputs } from "./download-inputs.js";

/**
 * Inputs given as upload ids (docs/uploads.md): the worker reads them from the upload store, and checks them again
 * itself (the job's org, complete, not expired, within the plan's size), whatever the gateway let through.
 */
let store: UploadStore;
let agent: InputAgent;
let clip: Buffer;

beforeAll(async () => {
  const dir = await mkdtemp(path.join(tmpdir(), "rb-worker-uploads-"));
  await promisify(execFile)("ffmpeg", ["-v", "error", "-f", "lavfi", "-i", "testsrc=duration=1:size=160x120:rate=10", "-c:v", "libx264", "-pix_fmt", "yuv420p", path.join(dir, "clip.mp4")]);
  clip = await readFile(path.join(dir, "clip.mp4"));
  // The run's store: the disk, or with STORAGE=s3 the S3-protocol server's bucket (libs/testing global-setup.ts).
  const storage = { MODE: "test", ...z.object(storageVariables).parse(process.env) };
  store = createUploadStore(storage, { localDir: path.join(dir, "uploads"), retentionMs: 3_600_000 });
  agent = createInputAgent({ allowPrivateAddresses: false, connectTimeoutMs: 1_000, headersTimeoutMs: 1_000, bodyIdleTimeoutMs: 1_000 });
});

afterAll(async () => {
  await agent.close();
});

const read = async (source: string, orgId: string, maxBytes = 10 * 1024 * 1024, withStore = true) =>
  downloadInputs({
    urls: { source },
    ...(withStore ? { uploads: { store, orgId } } : {}),
    workDir: await mkdtemp(path.join(tmpdir(), "rb-worker-job-")),
    maxBytes,
    timeoutMs: 5_000,
    agent,
    signal: new AbortController().signal,
    probe: "ffprobe",
  });

async function inputErrorOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(() => undefined, (thrown: unknown) => thrown);
  expect(error).toBeInstanceOf(JobFailure);
  expect((error as JobFailure).code).toBe("INPUT_ERROR");
  return (error as JobFailure).message;
}

describe("upload ids as job inputs on the worker", () => {
  it("copies a complete upload of the job's org into the job's directory, with its file name's extension, and probes it", async () => {
    const upload = await store.createComplete({ orgId: "org_a", bytes: clip, filename: "clip.mp4" });
    const { inputs, probes } = await read(upload.id, "org_a");
    expect(inputs.source).toMatch(/input-source\.mp4$/);
    expect((await readFile(inputs.source!)).equals(clip)).toBe(true);
    expect(probes.source?.width).toBe(160);
  });

  it("fails with INPUT_ERROR for another org's upload, an incomplete one, one over the plan's size, an unknown one, or no store", async () => {
    const upload = await store.createComplete({ orgId: "org_a", bytes: clip, filename: "clip.mp4" });
    expect(await inputErrorOf(read(upload.id, "org_b"))).toBe(`inputs.source: upload ${upload.id} not found (expired uploads are deleted)`);
    expect(await inputErrorOf(read(upload.id, "org_a", 100))).toMatch(/larger than the plan's max input size/);
    expect(await inputErrorOf(read(upload.id, "org_a", undefined, false))).toBe("inputs.source: uploads are not readable here");
    const partial = await store.create({ orgId: "org_a", size: 10 });
    expect(await inputErrorOf(read(partial.id, "org_a"))).toBe(`inputs.source: upload ${partial.id} is not complete`);
    expect(await inputErrorOf(read("upload_01JBQ0000000000000000000AB", "org_a"))).toMatch(/not found/);
  });
});
