import { spawn } from "node:child_process";
import { createReadStream, mkdtempSync, readdirSync, readFileSync } from "node:fs";
import net from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { RenderbusClient } from "../packages/sdk/src/index.js";
import { api, createOrg, makeTestVideo, repoRoot, waitFor } from "./helpers.js";

/**
 * Uploads end to end, every service its own process: a file uploaded over tus through the gateway, the connection
 * cut at 60% and the upload resumed from the server's offset, then jobs reading it (REST, batch, MCP) run by a worker
 * process that reads the upload from the shared UPLOAD_DIR. With `STORAGE=s3` (the run's S3-protocol server, libs/testing
 * global-setup.ts) uploads are in the bucket: the worker gets an empty UPLOAD_DIR of its own, as a worker on another
 * machine would, and the gateway's stays empty.
 */
const onS3 = process.env.STORAGE === "s3";

describe("uploads as job inputs", () => {
  let system: RunningSystem;
  let clip: Buffer;
  let clipPath: string;

  beforeAll(async () => {
    const infra = testInfra();
    clipPath = join(await makeTestVideo(), "clip.mp4");
    clip = readFileSync(clipPath);
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("uploadse2e"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("uploadse2e"),
      ...(onS3 ? { serviceEnv: { worker: { UPLOAD_DIR: mkdtempSync(join(tmpdir(), "rb-worker-uploads-")) } } } : {}),
      env: { MODE: "test", PLANS_JSON: JSON.stringify({ pro: { requestsPerMinute: 100000 } }), IP_REQUESTS_PER_MINUTE: "1000000" },
    });
  }, 180_000);

  afterAll(async () => {
    await system?.stop();
  });

  const tus = (key: string) => (method: string, path: string, headers: Record<string, string> = {}, body?: Uint8Array) =>
    fetch(`${system.gatewayUrl}${path}`, { method, headers: { authorization: `Bearer ${key}`, "tus-resumable": "1.0.0", ...headers }, ...(body ? { body } : {}) });

  /** Uploads `bytes`, dropping the connection after 60% of them and resuming from the offset the server reports. */
  async function uploadWithCut(key: string, bytes: Buffer): Promise<string> {
    const call = tus(key);
    const created = await call("POST", "/uploads", { "upload-length": String(bytes.length), "upload-metadata": `filename ${Buffer.from("clip.mp4").toString("base64")}` });
    expect(created.status).toBe(201);
    const path = new URL(created.headers.get("location")!).pathname;

    const port = Number(new URL(system.gatewayUrl).port);
    const socket = net.connect(port, "127.0.0.1");
    await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
    socket.write(
      `PATCH ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${key}\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\n` +
        `Content-Type: application/offset+octet-stream\r\nContent-Length: ${bytes.length}\r\n\r\n`,
    );
    const cutAt = Math.floor(bytes.length * 0.6);
    await new Promise<void>((resolve) => socket.write(bytes.subarray(0, cutAt), () => resolve()));
    await new Promise((resolve) => setTimeout(resolve, 500));
    socket.destroy();

    // The offset settles once the gateway has written what reached it and released the upload's lock.
    let offset = -1;
    await waitFor(async () => {
      const head = await call("HEAD", path);
      const now = Number(head.headers.get("upload-offset"));
      const settled = head.status === 200 && now === offset && now > 0;
      offset = now;
      return settled || undefined;
    }, { timeoutMs: 30_000, intervalMs: 300, what: "the upload's offset to settle" });
    expect(offset).toBeLessThanOrEqual(cutAt);

    const rest = await call("PATCH", path, { "upload-offset": String(offset), "content-type": "application/offset+octet-stream" }, bytes.subarray(offset));
    expect(rest.status).toBe(204);
    return path.slice("/uploads/".length);
  }

  const finished = (call: ReturnType<typeof api>, jobId: string) =>
    waitFor(async () => {
      const response = await call("GET", `/jobs/${jobId}`);
      return ["completed", "failed", "cancelled"].includes(response.body.data.status) ? response.body.data : undefined;
    }, { timeoutMs: 120_000, intervalMs: 300, what: `job ${jobId} to finish` });

  it("transcodes a file uploaded with a dropped connection, and serves the result", async () => {
    const { key } = await createOrg(system.env, "pro", "Uploader");
    const call = api(system.gatewayUrl, key);
    const uploadId = await uploadWithCut(key, clip);
    const shown = await call("GET", `/uploads/${uploadId}`);
    expect(shown.body.data).toMatchObject({ id: uploadId, size: clip.length, offset: clip.length, complete: true });

    const submitted = await call("POST", "/jobs", { type: "transcode", inputs: { source: uploadId }, params: { width: 160, format: "mp4" } });
    expect(submitted.status, JSON.stringify(submitted.body)).toBe(201);
    const job = await finished(call, submitted.body.data.id);
    expect(job.status, JSON.stringify(job.error)).toBe("completed");
    expect(job.inputs).toEqual({ source: uploadId });
    expect(job.result.metadata.width).toBe(160);
    const output = await fetch(job.result.url);
    expect(output.status).toBe(200);
    expect((await output.arrayBuffer()).byteLength).toBe(job.result.metadata.fileSize);
  }, 240_000);

  it("takes upload ids in batches and MCP tool calls, and refuses another org's upload naming the input", async () => {
    const owner = await createOrg(system.env, "pro", "Owner");
    const other = await createOrg(system.env, "pro", "Other");
    const call = api(system.gatewayUrl, owner.key);
    const uploadId = await uploadWithCut(owner.key, clip);

    const foreign = await api(system.gatewayUrl, other.key)("POST", "/batches", { jobs: [{ type: "thumbnail", inputs: { source: uploadId } }] });
    expect(foreign.status).toBe(400);
    expect(foreign.body.error).toEqual({ code: "VALIDATION_ERROR", message: `jobs[0].inputs.source: upload ${uploadId} not found` });

    const batch = await call("POST", "/batches", { jobs: [{ type: "thumbnail", inputs: { source: uploadId }, params: { timestamp: 1 } }] });
    expect(batch.status, JSON.stringify(batch.body)).toBe(201);

    const agent = new Client({ name: "uploads-e2e", version: "1.0.0" });
    await agent.connect(new StreamableHTTPClientTransport(new URL("/mcp", system.gatewayUrl), { requestInit: { headers: { authorization: `Bearer ${owner.key}` } } }));
    const viaMcp = (await agent.callTool({ name: "submit_job", arguments: { type: "thumbnail", inputs: { source: uploadId }, params: { timestamp: 1 } } })) as CallToolResult;
    expect(viaMcp.isError, JSON.stringify(viaMcp.content)).toBeFalsy();
    const shown = (await agent.callTool({ name: "get_upload", arguments: { uploadId } })) as CallToolResult;
    expect((shown.structuredContent as { data: { complete: boolean } }).data.complete).toBe(true);
    await agent.close();

    for (const jobId of [batch.body.data.jobIds[0], (viaMcp.structuredContent as { data: { id: string } }).data.id]) {
      const job = await finished(call, jobId);
      expect(job.status, JSON.stringify(job.error)).toBe("completed");
    }
  }, 240_000);

  it("uploads with the SDK, reporting progress, and `renderbus jobs submit transcode --file ./clip.mp4 --wait` completes", async () => {
    const { key } = await createOrg(system.env, "pro", "SDK and CLI");
    const path = clipPath;

    const client = new RenderbusClient({ apiKey: key, baseUrl: system.gatewayUrl });
    const progress: [number, number | null][] = [];
    // Three PATCH requests, so progress moves in steps.
    const upload = await client.uploads.upload(createReadStream(path), { filename: "clip.mp4", size: clip.length, chunkSize: Math.ceil(clip.length / 3), onProgress: (sent, total) => progress.push([sent, total]) });
    expect(upload).toMatchObject({ size: clip.length, offset: clip.length, complete: true });
    expect(progress.at(-1)).toEqual([clip.length, clip.length]);
    expect(new Set(progress.map(([sent]) => sent)).size).toBeGreaterThan(2);
    const inMemory = await client.uploads.upload(new Uint8Array(clip), { filename: "clip.mp4" });
    expect(inMemory.complete).toBe(true);

    const bin = join(repoRoot, "packages", "sdk", "bin", "renderbus.js");
    const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("RENDERBUS_")));
    const result = await new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
      const child = spawn(process.execPath, [bin, "--api-key", key, "--base-url", system.gatewayUrl, "jobs", "submit", "transcode", "--file", path, "--param", "width=160", "--wait", "--timeout", "120"], {
        env: { ...env, RENDERBUS_CONFIG: join(tmpdir(), "rb-cli-none", "config.json") },
        stdio: ["ignore", "pipe", "pipe"],
      });
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk) => (stdout += chunk));
      child.stderr.on("data", (chunk) => (stderr += chunk));
      child.on("close", (code) => done({ code, stdout, stderr }));
    });
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(result.stderr).toContain("Uploading clip.mp4: 100%");
    expect(result.stderr).toMatch(/Uploaded clip\.mp4 as upload_[0-9A-Z]{26}/);
    expect(result.stdout).toMatch(/job_\w+\s+transcode\s+completed/);
  }, 240_000);

  it.runIf(onS3)("keeps uploads in the bucket with STORAGE=s3, none on the gateway's disk", () => {
    expect(readdirSync(system.env.UPLOAD_DIR!)).toEqual([]);
  });
});
