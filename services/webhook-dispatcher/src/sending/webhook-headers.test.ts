import { createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { webhookHeaders, type WebhookRequest } from "./post-webhook.js";

const secret = `whsec_${Buffer.from("dispatcher test secret, 32 bytes").toString("base64")}`;
const request: WebhookRequest = {
  url: "https://receiver.example/hooks",
  body: '{"event":"job.completed","jobId":"job_1","name":"café"}',
  event: "job.completed",
  deliveryId: "del_01JD0000000000000000000000",
  attempt: 2,
  secret,
  brand: "Renderbus",
};

describe("webhookHeaders", () => {
  it("keeps the seed's headers and signature exactly as they were", () => {
    const headers = webhookHeaders(request);
    expect(headers["X-Renderbus-Signature"]).toBe(`sha256=${createHmac("sha256", secret).update(request.body).digest("hex")}`);
    expect(headers["X-Renderbus-Event"]).toBe("job.completed");
    expect(headers["X-Renderbus-Delivery"]).toBe(request.deliveryId);
    expect(headers["X-Renderbus-Attempt"]).toBe("2");
    expect(headers["content-type"]).toBe("application/json");
  });

  it("adds webhook-id (the delivery id) and webhook-timestamp (the moment of the attempt, in unix seconds)", () => {
    const headers = webhookHeaders(request, 1_700_000_000_999);
    expect(headers["webhook-id"]).toBe(request.deliveryId);
    expect(headers["webhook-timestamp"]).toBe("1700000000");
  });

  it("adds X-Renderbus-Timestamp, the same second as webhook-timestamp, in the configured brand", () => {
    expect(webhookHeaders(request, 1_700_000_000_999)["X-Renderbus-Timestamp"]).toBe("1700000000");
    expect(webhookHeaders({ ...request, secret: undefined }, 1_700_000_001_000)["X-Renderbus-Timestamp"]).toBe("1700000001");
    expect(webhookHeaders({ ...request, brand: "Acme" }, 1_700_000_000_000)["X-Acme-Timestamp"]).toBe("1700000000");
  });

  it("adds a webhook-signature that the standardwebhooks package verifies with the org's secret", () => {
    const headers = webhookHeaders(request);
    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}=$/);
    expect(new Webhook(secret).verify(request.body, headers)).toEqual(JSON.parse(request.body));
  });

  it("sends the id and timestamp but neither signature when the org has no secret", () => {
    const headers = webhookHeaders({ ...request, secret: undefined });
    expect(headers["webhook-id"]).toBe(request.deliveryId);
    expect(headers).not.toHaveProperty("webhook-signature");
    expect(headers).not.toHaveProperty("X-Renderbus-Signature");
  });
});

describe("X-Renderbus-Sequence", () => {
  it("carries a FIFO delivery's sequence, in the configured brand", () => {
    expect(webhookHeaders({ ...request, sequence: 42 })["X-Renderbus-Sequence"]).toBe("42");
    expect(webhookHeaders({ ...request, brand: "Acme", sequence: 1 })["X-Acme-Sequence"]).toBe("1");
  });

  it("is left out for deliveries without one (endpoints that are not FIFO)", () => {
    expect(webhookHeaders(request)).not.toHaveProperty("X-Renderbus-Sequence");
    expect(webhookHeaders({ ...request, sequence: null })).not.toHaveProperty("X-Renderbus-Sequence");
  });
});
