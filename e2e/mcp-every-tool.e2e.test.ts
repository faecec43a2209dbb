import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import type { CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { createOrg, repoRoot, startReceiver, waitFor } from "./helpers.js";

/**
 * The tools the main MCP suite (mcp.e2e.test.ts) does not reach, each called over MCP against the running system:
 * webhook settings, endpoints and their delivery log, the usage ledger, batches listed, the tus upload link and the
 * list of kept uploads.
 */
describe("every MCP tool answers over /mcp as its REST route does", () => {
  let system: RunningSystem;
  let client: Client;
  let org: { orgId: string; key: string };

  async function callOk(name: string, args: Record<string, unknown> = {}): Promise<any> {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
    expect(JSON.parse((result.content[0] as { text: string }).text)).toEqual(result.structuredContent);
    return result.structuredContent;
  }

  async function callError(name: string, args: Record<string, unknown> = {}): Promise<string> {
    const result = (await client.callTool({ name, arguments: args })) as CallToolResult;
    expect(result.isError).toBe(true);
    return (result.content[0] as { text: string }).text;
  }

  beforeAll(async () => {
    const infra = testInfra();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("mcptools"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("mcptools"),
      env: { MODE: "test", LOG_LEVEL: "info", WEBHOOK_RETRY_SCHEDULE_MS: "100,200", WEBHOOK_TIMEOUT_MS: "2000" },
    });
    org = await createOrg(system.env, "scale", "Every tool");
    client = new Client({ name: "renderbus-e2e", version: "1.0.0" });
    await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", system.gatewayUrl), { requestInit: { headers: { authorization: `Bearer ${org.key}` } } }));
  }, 120_000);

  afterAll(async () => {
    await client?.close();
    await system?.stop();
  });

  it("sets the org's webhook and sends it a test event; manages an endpoint from creation to deletion, with its failed deliveries retried and recovered", async () => {
    const orgReceiver = await startReceiver();
    let answer = 500;
    const endpointReceiver = await startReceiver(() => answer);
    try {
      const org1 = await callOk("update_org_webhook", { orgId: org.orgId, webhookUrl: orgReceiver.url, webhookSecret: "org-secret-for-every-tool" });
      expect(org1.data).toMatchObject({ id: org.orgId, webhookUrl: orgReceiver.url, webhookSecretSet: true });
      const tested = await callOk("send_test_webhook");
      expect(tested.data).toMatchObject({ succeeded: true, delivery: { event: "webhook.test", status: "succeeded" } });
      expect(orgReceiver.received.map((hook) => hook.headers["x-renderbus-event"])).toEqual(["webhook.test"]);

      const created = await callOk("create_webhook_endpoint", { url: endpointReceiver.url, events: ["job.failed"], description: "flaky receiver" });
      const endpointId: string = created.data.id;
      expect(created.data).toMatchObject({ id: expect.stringMatching(/^ep_/), url: endpointReceiver.url, events: ["job.failed"], enabled: true });
      expect(created.data.secret).toMatch(/^whsec_/);
      expect((await callOk("get_webhook_endpoint", { endpointId })).data).toMatchObject({ id: endpointId, description: "flaky receiver" });
      expect((await callOk("get_webhook_endpoint", { endpointId })).data).not.toHaveProperty("secret");
      expect((await callOk("list_webhook_endpoints")).data.map((endpoint: { id: string }) => endpoint.id)).toEqual(["ep_default", endpointId]);
      const updated = await callOk("update_webhook_endpoint", { endpointId, description: "the receiver that answers 500", retrySchedule: "extended" });
      expect(updated.data).toMatchObject({ id: endpointId, description: "the receiver that answers 500", retrySchedule: "extended" });

      // A failed test delivery, then retried once the receiver answers 200.
      const failedTest = await callOk("send_test_webhook", { endpointId });
      expect(failedTest.data).toMatchObject({ succeeded: false, delivery: { status: "failed" } });
      const deliveryId: string = failedTest.data.delivery.id;
      const failedLog = await callOk("list_webhook_deliveries", { status: "failed", event: "webhook.test" });
      expect(failedLog.data.map((delivery: { id: string }) => delivery.id)).toEqual([deliveryId]);
      answer = 200;
      expect((await callOk("retry_webhook_delivery", { deliveryId })).data).toMatchObject({ id: deliveryId });
      await waitFor(async () => ((await callOk("list_webhook_deliveries", { status: "succeeded", event: "webhook.test" })).data.some((delivery: { id: string }) => delivery.id === deliveryId) ? true : undefined), {
        what: "the retried delivery to succeed",
      });

      // Another failure, recovered for the endpoint as a whole.
      answer = 500;
      const since = Date.now() - 1000;
      const secondId: string = (await callOk("send_test_webhook", { endpointId })).data.delivery.id;
      answer = 200;
      expect((await callOk("recover_webhook_endpoint", { endpointId, since })).data).toEqual({ count: 1 });
      await waitFor(async () => ((await callOk("list_webhook_deliveries", { status: "succeeded" })).data.some((delivery: { id: string }) => delivery.id === secondId) ? true : undefined), {
        what: "the recovered delivery to succeed",
      });
      expect(endpointReceiver.received.length).toBe(4);

      const rotated = await callOk("rotate_webhook_endpoint_secret", { endpointId, graceSeconds: 0 });
      expect(rotated.data.secret).toMatch(/^whsec_/);
      expect(rotated.data.secret).not.toBe(created.data.secret);
      expect((await callOk("delete_webhook_endpoint", { endpointId })).data).toEqual({ id: endpointId, deleted: true });
      expect(await callError("get_webhook_endpoint", { endpointId })).toMatch(/^NOT_FOUND: /);
      expect((await callOk("list_webhook_endpoints")).data.map((endpoint: { id: string }) => endpoint.id)).toEqual(["ep_default"]);
    } finally {
      await orgReceiver.close();
      await endpointReceiver.close();
    }
  });

  it("lists the org's batches and its usage ledger", async () => {
    const submitted = await callOk("submit_batch", {
      jobs: [
        { type: "qr.generate", params: { content: "one" } },
        { type: "qr.generate", params: { content: "two" } },
      ],
      idempotencyKey: randomUUID(),
    });
    const batchId: string = submitted.data.id;
    expect((await callOk("list_batches")).data.map((batch: { id: string }) => batch.id)).toContain(batchId);
    const usage = await callOk("get_usage", { limit: 50 });
    expect(usage.data.length).toBeGreaterThan(0);
    expect(usage.data.map((entry: { kind: string }) => entry.kind)).toContain("grant");
  });

  it("creates an upload link whose URL takes the file with the caller's own credential, and shows its offset", async () => {
    const file = Buffer.from("renderbus upload over a link");
    const link = await callOk("create_upload", { size: file.length, filename: "note.txt" });
    expect(link.data).toMatchObject({ upload: { id: expect.stringMatching(/^upload_/), size: file.length, offset: 0, complete: false }, method: "PATCH" });
    expect(JSON.stringify(link)).not.toContain(org.key);
    const uploadId: string = link.data.upload.id;
    const sent = await fetch(new URL(new URL(link.data.url).pathname, system.gatewayUrl), {
      method: "PATCH",
      headers: { ...link.data.headers, authorization: `Bearer ${org.key}` },
      body: file,
    });
    expect(sent.status).toBe(204);
    expect((await callOk("get_upload", { uploadId })).data).toMatchObject({ id: uploadId, offset: file.length, complete: true });
    expect(await callOk("list_uploads", { limit: 10 })).toEqual({ data: [expect.objectContaining({ id: uploadId, complete: true })], nextCursor: null });
    expect(await callError("create_upload", { size: 0 })).toMatch(/^VALIDATION_ERROR: /);
  });
});
