import { createHmac } from "node:crypto";
import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
import { standardWebhookHeaders, standardWebhookKey } from "./index.js";

const body = '{"event":"job.completed","jobId":"job_1","name":"café ✓"}';
const nowSeconds = () => Math.floor(Date.now() / 1000);
const sign = (secrets: string[], timestampSeconds = nowSeconds()): Record<string, string> => ({
  ...standardWebhookHeaders({ id: "del_01JABCDEF", timestampSeconds, body, secrets }),
});

describe("standardWebhookHeaders", () => {
  it("matches the Standard Webhooks specification's published test vector", () => {
    expect(
      standardWebhookHeaders({
        id: "msg_p5jXN8AQM9LWM0D4loKWxJek",
        timestampSeconds: 1614265330,
        body: '{"test": 2432232314}',
        secrets: ["whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw"],
      }),
    ).toEqual({
      "webhook-id": "msg_p5jXN8AQM9LWM0D4loKWxJek",
      "webhook-timestamp": "1614265330",
      "webhook-signature": "v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=",
    });
  });

  it("is accepted by the standardwebhooks package for a whsec_ secret, and the payload comes back intact", () => {
    const secret = `whsec_${Buffer.from("a 24-byte random secret!").toString("base64")}`;
    expect(new Webhook(secret).verify(body, { ...sign([secret]) })).toEqual(JSON.parse(body));
  });

  it("keys a whsec_ secret with its base64-decoded bytes, not the string", () => {
    const secret = "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw";
    expect(standardWebhookKey(secret)).toEqual(Buffer.from("MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw", "base64"));
    const headers = sign([secret]);
    const asString = createHmac("sha256", secret).update(`del_01JABCDEF.${headers["webhook-timestamp"]}.${body}`).digest("base64");
    expect(headers["webhook-signature"]).not.toBe(`v1,${asString}`);
  });

  it("keys any other secret with its UTF-8 bytes, which the package accepts as a raw key", () => {
    for (const secret of ["org-webhook-secret", "sécret-ünïcode-✓"]) {
      const headers = sign([secret]);
      expect(standardWebhookKey(secret)).toEqual(Buffer.from(secret, "utf8"));
      expect(new Webhook(new TextEncoder().encode(secret), { format: "raw" }).verify(body, { ...headers })).toEqual(JSON.parse(body));
      expect(() => new Webhook(new TextEncoder().encode("another-secret"), { format: "raw" }).verify(body, { ...headers })).toThrow();
    }
  });

  it("uses a whsec_ secret whose rest is not padded base64 as UTF-8 bytes, like any other secret", () => {
    expect(standardWebhookKey("whsec_test_secret")).toEqual(Buffer.from("whsec_test_secret", "utf8"));
    expect(standardWebhookKey("whsec_")).toEqual(Buffer.from("whsec_", "utf8"));
  });

  it("signs with every active secret, space separated, and each secret alone verifies", () => {
    const oldSecret = `whsec_${Buffer.from("the old secret").toString("base64")}`;
    const newSecret = `whsec_${Buffer.from("the new secret").toString("base64")}`;
    const headers = sign([newSecret, oldSecret]);
    expect(headers["webhook-signature"]!.split(" ")).toHaveLength(2);
    expect(headers["webhook-signature"]).toMatch(/^v1,[A-Za-z0-9+/]{43}= v1,[A-Za-z0-9+/]{43}=$/);
    expect(() => new Webhook(newSecret).verify(body, { ...headers })).not.toThrow();
    expect(() => new Webhook(oldSecret).verify(body, { ...headers })).not.toThrow();
    expect(() => new Webhook(`whsec_${Buffer.from("a third secret").toString("base64")}`).verify(body, { ...headers })).toThrow();
  });

  it("signs the body's UTF-8 bytes: a string and its bytes give the same signature", () => {
    const secrets = ["s3cret"];
    const fromString = standardWebhookHeaders({ id: "del_1", timestampSeconds: 1700000000, body, secrets });
    const fromBytes = standardWebhookHeaders({ id: "del_1", timestampSeconds: 1700000000, body: new TextEncoder().encode(body), secrets });
    expect(fromBytes).toEqual(fromString);
  });

  it("covers id, timestamp and body: changing any one fails verification", () => {
    const secret = `whsec_${Buffer.from("covering secret").toString("base64")}`;
    const headers = sign([secret]);
    const webhook = new Webhook(secret);
    expect(() => webhook.verify(body.replace("job_1", "job_2"), { ...headers })).toThrow();
    expect(() => webhook.verify(body, { ...headers, "webhook-id": "del_other" })).toThrow();
    expect(() => webhook.verify(body, { ...headers, "webhook-timestamp": String(Number(headers["webhook-timestamp"]) - 1) })).toThrow();
  });

  it("sends whole unix seconds, and the id and timestamp but no signature without a secret", () => {
    expect(standardWebhookHeaders({ id: "del_1", timestampSeconds: 1700000000.9, body, secrets: ["s"] })["webhook-timestamp"]).toBe("1700000000");
    const unsigned = { "webhook-id": "del_1", "webhook-timestamp": "1700000000" };
    expect(standardWebhookHeaders({ id: "del_1", timestampSeconds: 1700000000, body, secrets: [] })).toEqual(unsigned);
    expect(standardWebhookHeaders({ id: "del_1", timestampSeconds: 1700000000, body, secrets: [""] })).toEqual(unsigned);
  });
});
