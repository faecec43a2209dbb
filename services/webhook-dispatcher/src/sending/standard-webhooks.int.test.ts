import { Webhook } from "standardwebhooks";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import { newId } from "@renderbus/ids";
import { verifySignature } from "@renderbus/webhook-signing";
import {
  connectPublisher,
  jobCompletedEvent,
  startFakeAuth,
  startReceiver,
  startTestDispatcher,
  testConfig,
  type ReceivedRequest,
  type ReceiverBehaviour,
} from "../testing/dispatcher-harness.js";
import type { DispatcherService } from "../service.js";

/** A secret in the Standard Webhooks form (`whsec_` + base64 of random bytes), as an org may set it. */
const WHSEC_SECRET = `whsec_${Buffer.from("0123456789abcdef0123456789abcdef").toString("base64")}`;

let fakeAuth: Awaited<ReturnType<typeof startFakeAuth>>;
let publisher: Awaited<ReturnType<typeof connectPublisher>>;
let dispatcher: DispatcherService;
const receivers: { stop(): Promise<void> }[] = [];

async function deliveryToNewOrg(secret: string, behave?: ReceiverBehaviour) {
  const receiver = await startReceiver(behave);
  receivers.push(receiver);
  const orgId = newId("org");
  fakeAuth.setTarget({ orgId, plan: "pro", url: receiver.url, secret });
  await publisher.publish("job.completed", jobCompletedEvent(orgId));
  return receiver;
}

/** Node gives single-valued headers as strings; the package wants a plain string record. */
const headersOf = (request: ReceivedRequest) => request.headers as Record<string, string>;

beforeAll(async () => {
  const { natsUrl } = testInfra();
  const databaseUrl = await createTestDatabase("dispatcherstdhooks");
  const namespace = testNamespace("stdhooks");
  fakeAuth = await startFakeAuth();
  publisher = await connectPublisher(natsUrl, namespace);
  dispatcher = await startTestDispatcher(
    testConfig({ databaseUrl, natsUrl, namespace, authAddress: fakeAuth.address }, { WEBHOOK_RETRY_SCHEDULE_MS: "1100,1100,1100", WEBHOOK_TIMEOUT_MS: "2000" }),
  );
});

afterAll(async () => {
  await dispatcher?.stop();
  await publisher?.close();
  await fakeAuth?.stop();
  await Promise.all(receivers.map((receiver) => receiver.stop()));
});

describe("Standard Webhooks headers on a real delivery", () => {
  it("is verified by the standardwebhooks package with the org's whsec_ secret, and still by the seed's signature", async () => {
    const receiver = await deliveryToNewOrg(WHSEC_SECRET);
    const [request] = await receiver.waitFor(1);
    const headers = headersOf(request!);
    expect(headers["webhook-id"]).toBe(headers["x-renderbus-delivery"]);
    expect(headers["webhook-id"]).toMatch(/^del_/);
    expect(Math.abs(Number(headers["webhook-timestamp"]) - request!.receivedAt / 1000)).toBeLessThan(5);
    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(WHSEC_SECRET).verify(request!.rawBody, headers)).toEqual(request!.json);
    expect(verifySignature(request!.rawBody, headers["x-renderbus-signature"], WHSEC_SECRET)).toBe(true);
    expect(() => new Webhook(`whsec_${Buffer.from("not the org's secret").toString("base64")}`).verify(request!.rawBody, headers)).toThrow();
  });

  it("is verified with a plain (non-whsec_) org secret used as its UTF-8 bytes", async () => {
    const secret = "plain-org-secret-ü";
    const receiver = await deliveryToNewOrg(secret);
    const [request] = await receiver.waitFor(1);
    const headers = headersOf(request!);
    expect(new Webhook(new TextEncoder().encode(secret), { format: "raw" }).verify(request!.rawBody, headers)).toEqual(request!.json);
    expect(verifySignature(request!.rawBody, headers["x-renderbus-signature"], secret)).toBe(true);
  });

  // Retries come 1.1 s apart, so the retry's timestamp is at least a second later than the first attempt's.
  it("signs every attempt afresh: a retry keeps webhook-id and carries its own later timestamp, and verifies", async () => {
    let answered = 0;
    const receiver = await deliveryToNewOrg(WHSEC_SECRET, (_request, response) => response.writeHead(answered++ === 0 ? 500 : 200).end());
    const [first, second] = await receiver.waitFor(2);
    const [firstHeaders, secondHeaders] = [headersOf(first!), headersOf(second!)];
    expect(secondHeaders["x-renderbus-attempt"]).toBe("2");
    expect(secondHeaders["webhook-id"]).toBe(firstHeaders["webhook-id"]);
    expect(Number(secondHeaders["webhook-timestamp"])).toBeGreaterThan(Number(firstHeaders["webhook-timestamp"]));
    expect(new Webhook(WHSEC_SECRET).verify(second!.rawBody, secondHeaders)).toEqual(second!.json);
    expect(verifySignature(second!.rawBody, secondHeaders["x-renderbus-signature"], WHSEC_SECRET)).toBe(true);
  });
});
