import { mkdtempSync, readdirSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, startLocalS3, startSystem, testInfra, testNamespace, type LocalS3, type RunningSystem } from "@renderbus/testing";
import { api, createOrg, makeTestVideo, repoRoot, startFileServer, waitFor } from "./helpers.js";

/**
 * STORAGE=s3 (docs/operations.md#object-storage): the worker and the gateway share no directory, only a bucket of an
 * S3-protocol server (s3rver, started here).
 */
describe("outputs in an S3 object store", () => {
  let s3: LocalS3;
  let system: RunningSystem;
  let media: Awaited<ReturnType<typeof startFileServer>>;
  const gatewayOutputDir = mkdtempSync(join(tmpdir(), "rb-gateway-out-"));
  const workerOutputDir = mkdtempSync(join(tmpdir(), "rb-worker-out-"));

  beforeAll(async () => {
    const infra = testInfra();
    s3 = await startLocalS3();
    media = await startFileServer(await makeTestVideo());
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("objectstore"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("objectstore"),
      outputDir: gatewayOutputDir,
      env: { MODE: "test", ...s3.env },
      // The worker process has an empty output directory of its own: nothing it writes there could reach the gateway.
      serviceEnv: { worker: { OUTPUT_DIR: workerOutputDir } },
    });
  }, 180_000);

  afterAll(async () => {
    await system?.stop();
    await media?.close();
    await s3?.stop();
  });

  it("serves the output of a job whose worker process has its own empty output directory", async () => {
    const { orgId, key } = await createOrg(system.env, "starter", "Object storage");
    const call = api(system.gatewayUrl, key);
    const submitted = await call("POST", "/jobs", { type: "transcode", inputs: { source: media.url("clip.mp4") }, params: { height: 120, crf: 40, preset: "ultrafast" } });
    expect(submitted.status).toBe(201);
    const jobId: string = submitted.body.data.id;
    const job = await waitFor(
      async () => {
        const response = await call("GET", `/jobs/${jobId}`);
        return ["completed", "failed", "cancelled"].includes(response.body.data.status) ? response.body.data : undefined;
      },
      { timeoutMs: 120_000, intervalMs: 250, what: "the transcode to finish" },
    );
    expect(job).toMatchObject({ status: "completed", result: { url: expect.stringMatching(new RegExp(`^${system.gatewayUrl}/outputs/${orgId}/${jobId}/output\\.mp4\\?`)) } });

    // The gateway's signed link redirects to a presigned URL of the bucket...
    const redirect = await fetch(job.result.url, { redirect: "manual" });
    expect(redirect.status).toBe(302);
    const location = new URL(redirect.headers.get("location")!);
    expect(location.origin).toBe(s3.endpoint);
    expect(location.pathname).toBe(`/${s3.bucket}/outputs/${orgId}/${jobId}/output.mp4`);
    // ... which a client follows to the worker's bytes.
    const download = await fetch(job.result.url);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("video/mp4");
    const bytes = Buffer.from(await download.arrayBuffer());
    expect(bytes.length).toBe(job.result.metadata.fileSize);
    expect(bytes.subarray(4, 8).toString("latin1")).toBe("ftyp");

    // Neither process kept a local copy.
    expect(readdirSync(workerOutputDir)).toEqual([]);
    expect(readdirSync(gatewayOutputDir)).toEqual([]);
  });
});
