import dns, { type LookupAddress } from "node:dns";
import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { parseConfig } from "@renderbus/config";
import { newId } from "@renderbus/ids";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import { configSchema } from "../config.js";
import type { DispatcherService } from "../service.js";
import { startFakeAuth, startReceiver, startTestDispatcher, testConfig, webhooksClient } from "../testing/dispatcher-harness.js";

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

/**
 * With ALLOW_PRIVATE_ADDRESSES connections are not guarded, and what a private address answered is not kept in the
 * attempt log (docs/webhooks.md: the log must not become a way to read internal services). The address judged is the
 * one the connection reached: a name looked up again could answer otherwise (DNS rebinding).
 */
describe("webhook responses with ALLOW_PRIVATE_ADDRESSES", () => {
  const REBINDING_NAME = "rebind.attacker.example";
  let fakeAuth: Awaited<ReturnType<typeof startFakeAuth>>;
  let dispatcher: DispatcherService;
  let client: ReturnType<typeof webhooksClient>;
  let internal: Awaited<ReturnType<typeof startReceiver>>;

  beforeAll(async () => {
    fakeAuth = await startFakeAuth();
    internal = await startReceiver((_request, response) => response.writeHead(200, { "x-internal": "yes" }).end("INTERNAL ADMIN PAGE: db password hunter2"));
    // The rebinding name: its first answer is the internal address (the connection's lookup), every later one public.
    // Answered through whichever resolver the process asks: getaddrinfo (dns.lookup) or c-ares (Resolver).
    let answers = 0;
    const nextAnswer = () => (answers++ === 0 ? "127.0.0.1" : "93.184.216.34");
    const lookup = dns.lookup;
    vi.spyOn(dns, "lookup").mockImplementation(((hostname: string, options: dns.LookupOptions | ((...args: unknown[]) => void), callback?: (...args: unknown[]) => void) => {
      if (hostname !== REBINDING_NAME) return (lookup as (...args: unknown[]) => void)(hostname, options, callback);
      const done = typeof options === "function" ? options : callback!;
      const address = nextAnswer();
      const all = typeof options === "object" && options.all === true;
      done(null, ...(all ? [[{ address, family: 4 }] satisfies LookupAddress[]] : [address, 4]));
    }) as typeof dns.lookup);
    const promisesLookup = dns.promises.lookup;
    vi.spyOn(dns.promises, "lookup").mockImplementation((async (hostname: string, options?: dns.LookupOptions) => {
      if (hostname !== REBINDING_NAME) return promisesLookup(hostname, options ?? {});
      const address = nextAnswer();
      return options?.all ? [{ address, family: 4 }] : { address, family: 4 };
    }) as typeof dns.promises.lookup);
    const { resolve4, resolve6 } = dns.promises.Resolver.prototype;
    vi.spyOn(dns.promises.Resolver.prototype, "resolve4").mockImplementation(function (this: dns.promises.Resolver, hostname: string, ...rest: unknown[]) {
      return hostname === REBINDING_NAME ? Promise.resolve([nextAnswer()]) : (resolve4 as (...args: unknown[]) => Promise<string[]>).call(this, hostname, ...rest);
    } as typeof resolve4);
    vi.spyOn(dns.promises.Resolver.prototype, "resolve6").mockImplementation(function (this: dns.promises.Resolver, hostname: string, ...rest: unknown[]) {
      return hostname === REBINDING_NAME ? Promise.reject(Object.assign(new Error("no AAAA"), { code: "ENODATA" })) : (resolve6 as (...args: unknown[]) => Promise<string[]>).call(this, hostname, ...rest);
    } as typeof resolve6);
    const config = testConfig({ databaseUrl: await createTestDatabase("dispatcherrebind"), natsUrl: testInfra().natsUrl, namespace: testNamespace("rebind"), authAddress: fakeAuth.address });
    expect(config.ALLOW_PRIVATE_ADDRESSES).toBe(true);
    dispatcher = await startTestDispatcher(config);
    client = webhooksClient(dispatcher.grpcPort);
  });

  afterAll(async () => {
    vi.restoreAllMocks();
    client?.close();
    await dispatcher?.stop();
    await internal?.stop();
    await fakeAuth?.stop();
  });

  it("keeps neither the body nor the headers of an internal service reached through a name that resolves to a public address afterwards", async () => {
    const orgId = newId("org");
    fakeAuth.setTarget({ orgId, plan: "pro", url: `http://${REBINDING_NAME}:${internal.port}/hooks`, secret: "s3cret-s3cret" });
    const response = await client.sendTest({}, { auth: { orgId, userId: "usr_test", plan: "pro", role: "admin" } });
    expect(internal.received).toHaveLength(1);
    expect(response.succeeded).toBe(true);
    const [attempt] = response.delivery!.attemptLog;
    expect(attempt!.responseStatus).toBe(200);
    expect(attempt!.responseExcerpt).toBeUndefined();
    expect(attempt!.responseHeaders).toEqual({});
  });
});
