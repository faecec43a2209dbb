import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { Readable } from "node:stream";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createObjectStore, signOutputUrl, type ObjectStore } from "@renderbus/storage";
import { startLocalS3, type LocalS3 } from "@renderbus/testing";
import { gatewayConfigSchema } from "../config.js";
import { inertGatewayApp } from "../http/inert-gateway.test-support.js";

const KEY = "org_1/job_1/output.mp4";
const BYTES = Buffer.from("the output's bytes");

let s3: LocalS3;
let localDir: string;
beforeAll(async () => {
  s3 = await startLocalS3();
  localDir = await mkdtemp(path.join(tmpdir(), "rb-gateway-outputs-"));
});
afterAll(async () => {
  await s3?.stop();
  await rm(localDir, { recursive: true, force: true });
});

/** The gateway over `env`'s object store, with KEY stored in it; returns a function that GETs a path. */
async function gatewayWith(env: Record<string, string>) {
  const config = gatewayConfigSchema.parse({ OUTPUT_DIR: localDir, ...env });
  const outputs: ObjectStore = createObjectStore(config, { area: "outputs", localDir });
  await outputs.putStream(KEY, Readable.from([BYTES]), "video/mp4");
  const app = await inertGatewayApp({ config, outputs });
  const link = (key: string, expiresAt = Date.now() + 3_600_000) => {
    const url = new URL(signOutputUrl({ publicUrl: "http://127.0.0.1:3000", key, expiresAt, secret: config.OUTPUT_SIGNING_SECRET }));
    return `${url.pathname}${url.search}`;
  };
  return { app, link };
}

describe("GET /outputs/* (signed download links)", () => {
  it("with STORAGE=s3 redirects a valid link to a presigned URL of the store that serves the bytes", async () => {
    const { app, link } = await gatewayWith(s3.env);
    const response = await app.inject({ method: "GET", url: link(KEY) });
    await app.close();
    expect(response.statusCode).toBe(302);
    expect(response.headers["cache-control"]).toBe("private, no-store");
    const location = new URL(response.headers.location as string);
    expect(location.origin).toBe(s3.endpoint);
    expect(location.pathname).toBe(`/${s3.bucket}/outputs/${KEY}`);
    expect(Number(location.searchParams.get("X-Amz-Expires"))).toBe(300);
    const download = await fetch(location);
    expect(download.status).toBe(200);
    expect(download.headers.get("content-type")).toBe("video/mp4");
    expect(Buffer.from(await download.arrayBuffer()).equals(BYTES)).toBe(true);
  });

  it("lets the dashboard's previews follow that redirect: its CSP admits the store's origin for images and media", async () => {
    const { app } = await gatewayWith(s3.env);
    const page = await app.inject({ method: "GET", url: "/app" });
    await app.close();
    const csp = String(page.headers["content-security-policy"]);
    expect(csp).toContain(`img-src 'self' http://127.0.0.1:3000 ${s3.endpoint} `);
    expect(csp).toContain(`media-src 'self' http://127.0.0.1:3000 ${s3.endpoint} `);
    expect(csp).toContain("connect-src 'self';");
  });

  it("never presigns past the link's own expiry", async () => {
    const { app, link } = await gatewayWith(s3.env);
    const response = await app.inject({ method: "GET", url: link(KEY, Date.now() + 20_000) });
    await app.close();
    expect(response.statusCode).toBe(302);
    expect(Number(new URL(response.headers.location as string).searchParams.get("X-Amz-Expires"))).toBeLessThanOrEqual(20);
  });

  it("with S3_DOWNLOADS=stream streams the object from S3 through the gateway", async () => {
    const { app, link } = await gatewayWith({ ...s3.env, S3_DOWNLOADS: "stream" });
    const response = await app.inject({ method: "GET", url: link(KEY) });
    await app.close();
    expect(response.statusCode).toBe(200);
    expect(response.headers["content-type"]).toBe("video/mp4");
    expect(response.headers["content-length"]).toBe(String(BYTES.length));
    expect(response.rawPayload.equals(BYTES)).toBe(true);
  });

  it("with STORAGE=local streams the file", async () => {
    const { app, link } = await gatewayWith({});
    const response = await app.inject({ method: "GET", url: link(KEY) });
    await app.close();
    expect(response.statusCode).toBe(200);
    expect(response.rawPayload.equals(BYTES)).toBe(true);
  });

  it("answers 404 NOT_FOUND for a validly signed link to a missing object, and 401 for a bad or expired one, before touching S3", async () => {
    const { app, link } = await gatewayWith(s3.env);
    const missing = await app.inject({ method: "GET", url: link("org_1/job_404/output.mp4") });
    expect(missing.statusCode).toBe(404);
    expect(missing.json()).toMatchObject({ error: { code: "NOT_FOUND" } });
    const expired = await app.inject({ method: "GET", url: link(KEY, Date.now() - 1) });
    expect(expired.statusCode).toBe(401);
    const tampered = await app.inject({ method: "GET", url: link(KEY).replace("job_1", "job_2") });
    expect(tampered.statusCode).toBe(401);
    expect(tampered.headers.location).toBeUndefined();
    await app.close();
  });

  it("answers 503 SERVICE_UNAVAILABLE when the S3 service cannot be reached", async () => {
    const closed = await startLocalS3();
    await closed.stop();
    const config = gatewayConfigSchema.parse({ ...closed.env, S3_DOWNLOADS: "stream" });
    const app = await inertGatewayApp({ config, outputs: createObjectStore(config, { area: "outputs", localDir }) });
    const url = new URL(signOutputUrl({ publicUrl: "http://127.0.0.1:3000", key: KEY, expiresAt: Date.now() + 60_000, secret: config.OUTPUT_SIGNING_SECRET }));
    const response = await app.inject({ method: "GET", url: `${url.pathname}${url.search}` });
    await app.close();
    expect(response.statusCode).toBe(503);
    expect(response.json()).toMatchObject({ error: { code: "SERVICE_UNAVAILABLE" } });
  });
});
