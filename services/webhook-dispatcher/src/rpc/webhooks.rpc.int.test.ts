import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "@renderbus/ids";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import type { DispatcherService } from "../service.js";
import {
  connectPublisher,
  eventually,
  jobCompletedEvent,
  startFakeAuth,
  startReceiver,
  startTestDispatcher,
  testConfig,
  webhooksClient,
} from "../testing/dispatcher-harness.js";

let fakeAuth: Awaited<ReturnType<typeof startFakeAuth>>;
let publisher: Awaited<ReturnType<typeof connectPublisher>>;
let dispatcher: DispatcherService;
let production: DispatcherService;
let client: ReturnType<typeof webhooksClient>;
let productionClient: ReturnType<typeof webhooksClient>;
const receivers: { stop(): Promise<void> }[] = [];

const as = (orgId: string, plan = "pro", role = "admin") => ({ auth: { orgId, userId: "usr_test", plan, role } });

beforeAll(async () => {
  const { natsUrl } = testInfra();
  const databaseUrl = await createTestDatabase("dispatcherrpc");
  fakeAuth = await startFakeAuth();
  const base = { databaseUrl, natsUrl, authAddress: fakeAuth.address };
  const namespace = testNamespace("rpc");
  publisher = await connectPublisher(natsUrl, namespace);
  dispatcher = await startTestDispatcher(testConfig({ ...base, namespace }, { WEBHOOK_RETRY_SCHEDULE_MS: "20,20,20", WEBHOOK_TIMEOUT_MS: "1000" }));
  // A production-mode dispatcher with its own database and namespace (sharing either would make it a replica).
  const productionDatabaseUrl = await createTestDatabase("dispatcherprod");
  production = await startTestDispatcher(
    testConfig({ ...base, databaseUrl: productionDatabaseUrl, namespace: testNamespace("prod") }, { MODE: "production", WEBHOOK_TIMEOUT_MS: "1000" }),
  );
  client = webhooksClient(dispatcher.grpcPort);
  productionClient = webhooksClient(production.grpcPort, { production: true });
});

afterAll(async () => {
  client?.close();
  productionClient?.close();
  await dispatcher?.stop();
  await production?.stop();
  await publisher?.close();
  await fakeAuth?.stop();
  await Promise.all(receivers.map((receiver) => receiver.stop()));
});

async function orgWithReceiver(behave?: Parameters<typeof startReceiver>[0]) {
  const receiver = await startReceiver(behave);
  receivers.push(receiver);
  const orgId = newId("org");
  fakeAuth.setTarget({ orgId, plan: "pro", url: receiver.url, secret: "test-secret" });
  return { orgId, receiver };
}

describe("Webhooks.ListDeliveries", () => {
  it("lists the org's deliveries newest first with filters and cursor pagination", async () => {
    const { orgId, receiver } = await orgWithReceiver();
    const jobIds = [newId("job"), newId("job"), newId("job")];
    for (const jobId of jobIds) await publisher.publish("job.completed", jobCompletedEvent(orgId, jobId));
    await publisher.publish("job.running", { jobId: jobIds[0]!, orgId, type: "transcode", createdAt: 1, startedAt: 2, workerId: "w" });
    await receiver.waitFor(4);
    await eventually(async () => {
      const { deliveries } = await client.listDeliveries({ limit: 10, status: "succeeded" }, as(orgId));
      return deliveries.length === 4 || undefined;
    });

    const first = await client.listDeliveries({ limit: 3 }, as(orgId));
    expect(first.deliveries).toHaveLength(3);
    expect(first.nextCursor).toBeDefined();
    const second = await client.listDeliveries({ limit: 3, cursor: first.nextCursor }, as(orgId));
    expect(second.deliveries).toHaveLength(1);
    expect(second.nextCursor).toBeUndefined();
    const ids = [...first.deliveries, ...second.deliveries].map((delivery) => delivery.id);
    expect(ids).toEqual([...ids].sort().reverse());

    const byJob = await client.listDeliveries({ limit: 10, jobId: jobIds[0] }, as(orgId));
    expect(byJob.deliveries.map((delivery) => delivery.event).sort()).toEqual(["job.completed", "job.running"]);
    const byEvent = await client.listDeliveries({ limit: 10, event: "job.running" }, as(orgId));
    expect(byEvent.deliveries).toHaveLength(1);
    expect((await client.listDeliveries({ limit: 10 }, as(newId("org")))).deliveries).toHaveLength(0);
    await expect(client.listDeliveries({ limit: 10, status: "bogus" }, as(orgId))).rejects.toMatchObject({ code: "VALIDATION_ERROR" });
    await expect(client.listDeliveries({ limit: 10 })).rejects.toMatchObject({ code: "UNAUTHORIZED" });
  });
});

describe("Webhooks.RetryDelivery", () => {
  it("sends a failed delivery again as a new chain with the same id and continued attempt numbers", async () => {
    let healthy = false;
    const { orgId, receiver } = await orgWithReceiver((_request, response) => response.writeHead(healthy ? 200 : 500).end());
    await publisher.publish("job.completed", jobCompletedEvent(orgId));
    const failed = await eventually(async () => {
      const { deliveries } = await client.listDeliveries({ limit: 1 }, as(orgId));
      return deliveries[0]?.status === "failed" ? deliveries[0] : undefined;
    });
    expect(failed.attempts).toBe(4);
    healthy = true;
    const restarted = await client.retryDelivery({ deliveryId: failed.id }, as(orgId));
    expect(restarted).toMatchObject({ id: failed.id, status: "pending" });
    const requests = await receiver.waitFor(5);
    expect(requests[4]!.headers["x-renderbus-attempt"]).toBe("5");
    expect(requests[4]!.headers["x-renderbus-delivery"]).toBe(failed.id);
    const succeeded = await eventually(async () => {
      const { deliveries } = await client.listDeliveries({ limit: 1 }, as(orgId));
      return deliveries[0]?.status === "succeeded" ? deliveries[0] : undefined;
    });
    expect(succeeded.attemptLog.map((attempt) => attempt.attempt)).toEqual([1, 2, 3, 4, 5]);
  });

  it("answers NOT_FOUND for another org's delivery", async () => {
    const { orgId, receiver } = await orgWithReceiver();
    await publisher.publish("job.completed", jobCompletedEvent(orgId));
    await receiver.waitFor(1);
    const delivery = await eventually(async () => (await client.listDeliveries({ limit: 1 }, as(orgId))).deliveries[0]);
    await expect(client.retryDelivery({ deliveryId: delivery.id }, as(newId("org")))).rejects.toMatchObject({ code: "NOT_FOUND" });
    await expect(client.retryDelivery({ deliveryId: "del_nope" }, as(orgId))).rejects.toMatchObject({ code: "NOT_FOUND" });
  });
});

describe("Webhooks.SendTest", () => {
  it("sends a signed webhook.test event and reports the outcome", async () => {
    const { orgId, receiver } = await orgWithReceiver();
    const response = await client.sendTest({}, as(orgId));
    expect(response.succeeded).toBe(true);
    expect(response.delivery).toMatchObject({ event: "webhook.test", status: "succeeded", attempts: 1 });
    const [request] = receiver.received;
    expect(request!.json.event).toBe("webhook.test");
    expect(request!.headers["x-renderbus-signature"]).toBe(`sha256=${createHmac("sha256", "test-secret").update(request!.rawBody).digest("hex")}`);
    expect(request!.headers["x-renderbus-delivery"]).toBe(response.delivery!.id);
  });

  it("reports a failing receiver without retrying the test event", async () => {
    const { orgId, receiver } = await orgWithReceiver((_request, response) => response.writeHead(401).end("bad signature"));
    const response = await client.sendTest({}, as(orgId));
    expect(response.succeeded).toBe(false);
    expect(response.delivery).toMatchObject({ status: "failed", lastResponseStatus: 401 });
    // The receiver is on 127.0.0.1, let through by ALLOW_PRIVATE_ADDRESSES: its answer is never recorded.
    expect(response.delivery!.attemptLog[0]!.responseStatus).toBe(401);
    expect(response.delivery!.attemptLog[0]!.responseExcerpt).toBeUndefined();
    expect(receiver.received).toHaveLength(1);
  });

  it("refuses members: only owners and admins send test events and retry deliveries, and nothing is sent", async () => {
    const { orgId, receiver } = await orgWithReceiver();
    await expect(client.sendTest({}, as(orgId, "pro", "member"))).rejects.toMatchObject({ code: "FORBIDDEN" });
    await expect(client.retryDelivery({ deliveryId: newId("del") }, as(orgId, "pro", "member"))).rejects.toMatchObject({ code: "FORBIDDEN" });
    expect(receiver.received).toHaveLength(0);
    expect((await client.sendTest({}, as(orgId, "pro", "owner"))).succeeded).toBe(true);
  });

  it("answers PLAN_LIMIT on a plan without webhooks and VALIDATION_ERROR without a URL", async () => {
    const freeOrg = newId("org");
    fakeAuth.setTarget({ orgId: freeOrg, plan: "free", url: "https://example.com/hook", secret: "s" });
    await expect(client.sendTest({}, as(freeOrg, "free"))).rejects.toMatchObject({ code: "PLAN_LIMIT" });
    const noUrl = newId("org");
    fakeAuth.setTarget({ orgId: noUrl, plan: "starter" });
    await expect(client.sendTest({}, as(noUrl, "starter"))).rejects.toMatchObject({ code: "VALIDATION_ERROR" });
  });
});

describe("production mode", () => {
  it.each([
    ["a loopback IP", (port: number) => `http://127.0.0.1:${port}/hooks`],
    ["a name resolving to 127.0.0.1", (port: number) => `http://localhost:${port}/hooks`],
    ["the metadata address", () => "http://169.254.169.254/latest/meta-data"],
    ["an IPv6-mapped loopback", (port: number) => `http://[::ffff:127.0.0.1]:${port}/hooks`],
  ])("refuses to connect to %s", async (_name, urlFor) => {
    const receiver = await startReceiver();
    receivers.push(receiver);
    const orgId = newId("org");
    fakeAuth.setTarget({ orgId, plan: "pro", url: urlFor(receiver.port), secret: "s" });
    const response = await productionClient.sendTest({}, as(orgId));
    expect(response.succeeded).toBe(false);
    expect(response.delivery!.lastError).toMatch(/refused to connect to a private, loopback or link-local address/);
    expect(receiver.received).toHaveLength(0);
  });
});
