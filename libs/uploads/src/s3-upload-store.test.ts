import { Readable } from "node:stream";
import { ListObjectsV2Command, S3Client } from "@aws-sdk/client-s3";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalS3, type LocalS3 } from "@renderbus/testing";
import { createS3UploadStore } from "./s3-upload-store.js";
import { createUploadStore } from "./upload-store-config.js";
import { uploadStoreContract } from "./upload-store-contract.js";

let s3: LocalS3;
let stores = 0;
beforeAll(async () => {
  s3 = await startLocalS3();
});
afterAll(async () => {
  await s3?.stop();
});

const credentials = () => ({ accessKeyId: s3.env.S3_ACCESS_KEY_ID!, secretAccessKey: s3.env.S3_SECRET_ACCESS_KEY! });

describe("the S3 upload store (against s3rver)", () => {
  // Each store its own prefix of the one bucket; 5 MiB parts (S3's minimum) so the contract's uploads span parts.
  uploadStoreContract((retentionMs) =>
    createS3UploadStore({ bucket: s3.bucket, prefix: `contract-${++stores}/`, endpoint: s3.endpoint, region: "us-east-1", forcePathStyle: true, credentials: credentials(), retentionMs, partSize: 5 * 1024 * 1024 }),
  );

  it("keeps uploads under uploads/ of the bucket when built from the configuration, apart from outputs", async () => {
    const config = { MODE: "test", STORAGE: "s3" as const, S3_ENDPOINT: s3.endpoint, S3_BUCKET: s3.bucket, S3_REGION: "us-east-1", S3_ACCESS_KEY_ID: s3.env.S3_ACCESS_KEY_ID, S3_SECRET_ACCESS_KEY: s3.env.S3_SECRET_ACCESS_KEY, S3_FORCE_PATH_STYLE: true, S3_PUBLIC_ENDPOINT: undefined };
    const store = createUploadStore(config, { localDir: "/nonexistent", retentionMs: 3_600_000 });
    const upload = await store.createComplete({ orgId: "org_a", bytes: Buffer.from("in the bucket") });
    const client = new S3Client({ endpoint: s3.endpoint, region: "us-east-1", forcePathStyle: true, credentials: credentials() });
    const listed = await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: "uploads/" }));
    expect((listed.Contents ?? []).map((object) => object.Key).sort()).toEqual([`uploads/${upload.id}`, `uploads/${upload.id}.info`]);
    // A second store (another machine: a worker) sees the same upload.
    expect(await createUploadStore(config, { localDir: "/other", retentionMs: 3_600_000 }).describe(upload.id)).toMatchObject({ complete: true, size: 13 });
    client.destroy();
  });
});

describe("deleting S3 uploads", () => {
  it("removes every object of an upload, the pending part of an unfinished one included", async () => {
    const store = createS3UploadStore({ bucket: s3.bucket, prefix: "sweep/", endpoint: s3.endpoint, region: "us-east-1", forcePathStyle: true, credentials: credentials(), retentionMs: 3_600_000 });
    const unfinished = await store.create({ orgId: "org_a", size: 10 });
    // Fewer bytes than a part: @tus/s3-store keeps them as `<id>.part` until more come.
    await store.dataStore.write(Readable.from([Buffer.from("abcd")]), unfinished.id, 0);
    await store.createComplete({ orgId: "org_a", bytes: Buffer.from("done") });
    const client = new S3Client({ endpoint: s3.endpoint, region: "us-east-1", forcePathStyle: true, credentials: credentials() });
    const keys = async () => ((await client.send(new ListObjectsV2Command({ Bucket: s3.bucket, Prefix: "sweep/" }))).Contents ?? []).map((object) => object.Key);
    expect(await keys()).toContain(`sweep/${unfinished.id}.part`);
    expect(await store.deleteExpired(Date.now() + 2 * 3_600_000)).toBe(2);
    expect(await keys()).toEqual([]);
    client.destroy();
  });
});
