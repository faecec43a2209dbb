import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parseConfig } from "@renderbus/config";
import { newId } from "@renderbus/ids";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import { configSchema } from "../config.js";
import type { DispatcherService } from "../service.js";
import { startFakeAuth, startReceiver, startTestDispatcher, webhooksClient } from "../testing/dispatcher-harness.js";

/**
 * The guard is on unless ALLOW_PRIVATE_ADDRESSES=true, whatever the MODE: a development-mode dispatcher configured
 * with nothing about addresses (as the image and compose run it when MODE is changed) refuses a loopback receiver.
 */
describe("webhook SSRF guard by default", () => {
  let fakeAuth: Awaited<ReturnType<typeof startFakeAuth>>;
  let dispatcher: DispatcherService;
  let client: ReturnType<typeof webhooksClient>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    fakeAuth = await startFakeAuth();
    receiver = await startReceiver((_request, response) => response.writeHead(500).end("internal answer"));
    const config = parseConfig(configSchema, {
      MODE: "development",
      LOG_LEVEL: "silent",
      DATABASE_URL: await createTestDatabase("dispatcherguard"),
      NATS_URL: testInfra().natsUrl,
      NATS_NAMESPACE: testNamespace("guard"),
      AUTH_GRPC_ADDRESS: fakeAuth.address,
      WEBHOOKS_GRPC_PORT: "0",
    });
    expect(config.ALLOW_PRIVATE_ADDRESSES).toBe(false);
    dispatcher = await startTestDispatcher(config);
    client = webhooksClient(dispatcher.grpcPort);
  });

  afterAll(async () => {
    client?.close();
    await dispatcher?.stop();
    await receiver?.stop();
    await fakeAuth?.stop();
  });

  it("refuses a loopback receiver in development mode without ALLOW_PRIVATE_ADDRESSES, never connecting", async () => {
    const orgId = newId("org");
    fakeAuth.setTarget({ orgId, plan: "pro", url: receiver.url, secret: "s" });
    const response = await client.sendTest({}, { auth: { orgId, userId: "usr_test", plan: "pro", role: "admin" } });
    expect(response.succeeded).toBe(false);
    expect(response.delivery!.lastError).toMatch(/refused to connect to a private, loopback or link-local address/);
    expect(response.delivery!.attemptLog[0]!.responseExcerpt).toBeUndefined();
    expect(receiver.received).toHaveLength(0);
  });
});
