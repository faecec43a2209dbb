import { Readable } from "node:stream";
import { buffer } from "node:stream/consumers";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { startLocalS3, type LocalS3 } from "@renderbus/testing";
import { objectStoreContract } from "./object-store-contract.js";
import { createS3ObjectStore, ObjectStoreError } from "./s3-object-store.js";
import { createObjectStore } from "./storage-config.js";

let s3: LocalS3;
let stores = 0;
beforeAll(async () => {
  s3 = await startLocalS3();
});
afterAll(async () => {
  await s3?.stop();
});

const optionsFor = (prefix: string) => ({
  bucket: s3.bucket,
  prefix,
  endpoint: s3.endpoint,
  region: "us-east-1",
  forcePathStyle: true,
  credentials: { accessKeyId: s3.env.S3_ACCESS_KEY_ID!, secretAccessKey: s3.env.S3_SECRET_ACCESS_KEY! },
});

describe("S3 object store (against s3rver)", () => {
  // Each store its own prefix of the one bucket, as outputs/ and uploads/ share a bucket in production.
  objectStoreContract(() => createS3ObjectStore(optionsFor(`contract-${++stores}/`)));

  it("presigns a GET URL that downloads the object without credentials, at the public endpoint when one is set", async () => {
    const store = createS3ObjectStore(optionsFor("presign/"));
    await store.putStream("org_1/job_1/output.bin", Readable.from([Buffer.from("presigned bytes")]), "video/mp4");
    const url = await store.presignedDownloadUrl("org_1/job_1/output.bin", { expiresInSeconds: 120 });
    expect(url).toMatch(new RegExp(`^${s3.endpoint}/${s3.bucket}/presign/org_1/job_1/output\\.bin\\?.*X-Amz-Signature=`));
    expect(new URL(url!).searchParams.get("X-Amz-Expires")).toBe("120");
    const response = await fetch(url!);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("video/mp4");
    expect(Buffer.from(await response.arrayBuffer()).toString()).toBe("presigned bytes");

    const publicStore = createS3ObjectStore({ ...optionsFor("presign/"), publicEndpoint: "https://files.example.com" });
    expect(await publicStore.presignedDownloadUrl("org_1/job_1/output.bin", { expiresInSeconds: 60 })).toMatch(/^https:\/\/files\.example\.com\/renderbus-test\/presign\/org_1\/job_1\/output\.bin\?/);
  });

  it("keeps the objects of one prefix apart from another's", async () => {
    const outputs = createObjectStore({ MODE: "test", STORAGE: "s3", ...s3Config() }, { area: "outputs", localDir: "/nonexistent" });
    const uploads = createObjectStore({ MODE: "test", STORAGE: "s3", ...s3Config() }, { area: "uploads", localDir: "/nonexistent" });
    await outputs.putStream("org_1/shared/name.bin", Readable.from([Buffer.from("output")]), "text/plain");
    expect(await uploads.head("org_1/shared/name.bin")).toBeUndefined();
    expect(await buffer((await outputs.open("org_1/shared/name.bin"))!.stream)).toEqual(Buffer.from("output"));
  });

  it("reports a missing bucket as an error that names S3's code, not as a missing object", async () => {
    const store = createS3ObjectStore({ ...optionsFor(""), bucket: "no-such-bucket" });
    const failure = await store.putStream("org_1/x/y.bin", Readable.from([Buffer.from("x")]), "text/plain").catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ObjectStoreError);
    expect((failure as ObjectStoreError).message).toMatch(/NoSuchBucket/);
    expect((failure as ObjectStoreError).message).not.toContain(s3.env.S3_SECRET_ACCESS_KEY);
  });
});

function s3Config() {
  return {
    S3_ENDPOINT: s3.endpoint,
    S3_BUCKET: s3.bucket,
    S3_REGION: "us-east-1",
    S3_ACCESS_KEY_ID: s3.env.S3_ACCESS_KEY_ID,
    S3_SECRET_ACCESS_KEY: s3.env.S3_SECRET_ACCESS_KEY,
    S3_FORCE_PATH_STYLE: true,
    S3_PUBLIC_ENDPOINT: undefined,
  };
}
