import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isRpcServing, loadRpcTransport } from "@renderbus/rpc";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { createTestCertificateAuthority } from "../libs/config/src/test-fixtures/test-certificates.js";
import { admin, api, createOrg, makeTestVideo, repoRoot, startFileServer, startReceiver, waitFor } from "./helpers.js";

// Every gRPC edge of a job (gateway -> auth and jobs, jobs -> auth, worker -> jobs and auth, dispatcher -> auth) over
// mutual TLS: each service built from RPC_TRANSPORT=tls and RPC_TLS_* as docs/operations.md describes. One
// certificate serves all five here (SAN IP:127.0.0.1, the host of every *_GRPC_ADDRESS); libs/rpc/src/rpc-tls.int.test.ts
// shows what TLS refuses.
describe("a system whose services call each other over mutual TLS", () => {
  let system: RunningSystem;
  let media: Awaited<ReturnType<typeof startFileServer>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const dir = mkdtempSync(join(tmpdir(), "rpc-tls-system-"));

  beforeAll(async () => {
    const infra = testInfra();
    const leaf = createTestCertificateAuthority(dir, "renderbus").issue("services");
    media = await startFileServer(await makeTestVideo());
    receiver = await startReceiver();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("rpctls"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("rpctls"),
      env: { MODE: "test", RPC_TRANSPORT: "tls", RPC_TLS_CA: leaf.ca, RPC_TLS_CERT: leaf.cert, RPC_TLS_KEY: leaf.key, WEBHOOK_RETRY_SCHEDULE_MS: "200,400,800" },
    });
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await media?.close();
    await receiver?.close();
    rmSync(dir, { recursive: true, force: true });
  });

  it("refuses a plaintext client on every gRPC port", async () => {
    const transport = loadRpcTransport(system.env);
    for (const address of [system.env.AUTH_GRPC_ADDRESS!, system.env.JOBS_GRPC_ADDRESS!, system.env.WEBHOOKS_GRPC_ADDRESS!]) {
      expect(await isRpcServing(address, 2000), address).toBe(false);
      expect(await isRpcServing(address, 2000, "", transport), address).toBe(true);
    }
  });

  it("is ready, and runs a job to its signed webhook", async () => {
    const ready = await fetch(`${system.gatewayUrl}/readyz`);
    expect(await ready.json()).toMatchObject({ data: { status: "ready", checks: { auth: true, jobs: true, webhooks: true } } });

    const { orgId, key } = await createOrg(system.env, "starter", "Over TLS");
    await admin(system.env, "org:webhook", "--org", orgId, "--url", receiver.url, "--secret", "whsec_rpc_tls_test_secret");
    const submitted = await api(system.gatewayUrl, key)("POST", "/jobs", { type: "extract.metadata", inputs: { source: media.url("clip.mp4") } });
    expect(submitted.status).toBe(201);
    const completed = await waitFor(() => receiver.received.find((hook) => hook.headers["x-renderbus-event"] === "job.completed"), {
      timeoutMs: 45_000,
      what: "the job.completed webhook",
    });
    expect(JSON.parse(completed.rawBody.toString("utf8"))).toMatchObject({ event: "job.completed", jobId: submitted.body.data.id });
  });
});
