import { Webhook } from "standardwebhooks";
import { describe, expect, it } from "vitest";
// The dispatcher's signer (test-only import: the SDK itself must not depend on @renderbus/* at runtime).
import { signatureOf, standardWebhookHeaders } from "@renderbus/webhook-signing";
import { constructWebhookEvent, verifyWebhook, WebhookVerificationError } from "./verify-webhook.js";

const secret = "whsec_test_secret";
const body = '{"event":"job.completed","jobId":"job_1","cost":{"credits":2,"breakdown":"10s video @720p"},"name":"café"}';
const headersFor = (signature: string) => ({ "x-renderbus-signature": signature, "x-renderbus-event": "job.completed" });

describe("verifyWebhook", () => {
  it("accepts what the dispatcher signs, given as a string, Buffer, Uint8Array or ArrayBuffer", () => {
    const headers = headersFor(signatureOf(body, secret));
    const bytes = new TextEncoder().encode(body);
    expect(verifyWebhook(body, headers, secret)).toBe(true);
    expect(verifyWebhook(Buffer.from(body), headers, secret)).toBe(true);
    expect(verifyWebhook(bytes, headers, secret)).toBe(true);
    expect(verifyWebhook(bytes.buffer.slice(bytes.byteOffset, bytes.byteOffset + bytes.byteLength), headers, secret)).toBe(true);
  });

  it("reads the header from fetch Headers, Node's lowercase headers and any letter case", () => {
    const signature = signatureOf(body, secret);
    expect(verifyWebhook(body, new Headers({ "X-Renderbus-Signature": signature }), secret)).toBe(true);
    expect(verifyWebhook(body, { "X-RENDERBUS-SIGNATURE": signature }, secret)).toBe(true);
    expect(verifyWebhook(body, { "x-acme-signature": signature }, secret, { brand: "Acme" })).toBe(true);
    expect(verifyWebhook(body, { "x-acme-signature": signature }, secret)).toBe(false);
  });

  it("rejects a tampered body, including re-serialised JSON of the same payload", () => {
    const headers = headersFor(signatureOf(body, secret));
    expect(verifyWebhook(body.replace("job_1", "job_2"), headers, secret)).toBe(false);
    expect(verifyWebhook(`${body}\n`, headers, secret)).toBe(false);
    expect(verifyWebhook(JSON.stringify(JSON.parse(body), null, 2), headers, secret)).toBe(false);
  });

  it("rejects another secret, a missing, truncated, non-hex or wrongly prefixed signature", () => {
    const signature = signatureOf(body, secret);
    expect(verifyWebhook(body, headersFor(signature), "whsec_other")).toBe(false);
    expect(verifyWebhook(body, {}, secret)).toBe(false);
    expect(verifyWebhook(body, headersFor(signature.slice(0, -2)), secret)).toBe(false);
    expect(verifyWebhook(body, headersFor(`${signature.slice(0, -1)}z`), secret)).toBe(false);
    expect(verifyWebhook(body, headersFor(signature.replace("sha256=", "sha1=")), secret)).toBe(false);
    expect(verifyWebhook(body, headersFor(signature.replace("sha256=", "")), secret)).toBe(false);
    expect(verifyWebhook(body, headersFor(signature), "")).toBe(false);
  });

  it("accepts when any of several signatures matches (comma-separated or repeated header), and not otherwise", () => {
    const good = signatureOf(body, secret);
    const other = signatureOf(body, "whsec_old");
    expect(verifyWebhook(body, headersFor(`${other}, ${good}`), secret)).toBe(true);
    expect(verifyWebhook(body, headersFor(`${other} ${good}`), secret)).toBe(true);
    expect(verifyWebhook(body, { "x-renderbus-signature": [other, good] }, secret)).toBe(true);
    expect(verifyWebhook(body, headersFor(`${other}, ${signatureOf("{}", secret)}`), secret)).toBe(false);
  });

  it("accepts either secret during a rotation", () => {
    const headers = headersFor(signatureOf(body, "whsec_old"));
    expect(verifyWebhook(body, headers, ["whsec_new", "whsec_old"])).toBe(true);
    expect(verifyWebhook(body, headers, ["whsec_new"])).toBe(false);
  });
});

describe("constructWebhookEvent", () => {
  it("returns the parsed payload of a valid webhook and throws WebhookVerificationError otherwise", () => {
    expect(constructWebhookEvent(body, headersFor(signatureOf(body, secret)), secret)).toMatchObject({ event: "job.completed", jobId: "job_1" });
    expect(() => constructWebhookEvent(body, headersFor(signatureOf(body, "nope")), secret)).toThrow(WebhookVerificationError);
  });
});

describe("verifyWebhook with Standard Webhooks headers", () => {
  const standardSecret = `whsec_${Buffer.from("sdk standard webhooks test key!!").toString("base64")}`;
  const id = "del_01JD0000000000000000000000";
  const nowMs = 1_760_000_000_000;
  const nowSeconds = nowMs / 1000;
  /** What the dispatcher sends: both schemes, signed with the same secret. */
  const delivery = (signingSecret = standardSecret, timestampSeconds = nowSeconds, signedBody = body): Record<string, string> => ({
    ...standardWebhookHeaders({ id, timestampSeconds, body: signedBody, secrets: [signingSecret] }),
    "x-renderbus-signature": signatureOf(signedBody, signingSecret),
    "x-renderbus-delivery": id,
  });
  const at = { now: nowMs };

  it("accepts a request signed by the dispatcher, with a whsec_ secret or a plain one", () => {
    expect(verifyWebhook(body, delivery(), standardSecret, at)).toBe(true);
    expect(verifyWebhook(Buffer.from(body), new Headers(delivery()), standardSecret, at)).toBe(true);
    expect(verifyWebhook(body, delivery("a-plain-org-secret"), "a-plain-org-secret", at)).toBe(true);
  });

  it("accepts what the standardwebhooks package signs (base64 key after whsec_)", () => {
    const signature = new Webhook(standardSecret).sign(id, new Date(nowMs), body);
    const headers = { "webhook-id": id, "webhook-timestamp": String(nowSeconds), "webhook-signature": signature };
    expect(verifyWebhook(body, headers, standardSecret, at)).toBe(true);
  });

  it("judges a request with webhook-signature by it alone: a valid seed signature does not rescue a bad one", () => {
    const headers: Record<string, string> = { ...delivery(), "webhook-signature": `v1,${Buffer.alloc(32).toString("base64")}` };
    expect(headers["x-renderbus-signature"]).toBe(signatureOf(body, standardSecret));
    expect(verifyWebhook(body, headers, standardSecret, at)).toBe(false);
    expect(verifyWebhook(body, headers, standardSecret, { ...at, scheme: "seed" })).toBe(true);
  });

  it("rejects a timestamp more than 5 minutes from now either way, unless the tolerance is widened", () => {
    expect(verifyWebhook(body, delivery(standardSecret, nowSeconds - 300), standardSecret, at)).toBe(true);
    expect(verifyWebhook(body, delivery(standardSecret, nowSeconds - 301), standardSecret, at)).toBe(false);
    expect(verifyWebhook(body, delivery(standardSecret, nowSeconds + 301), standardSecret, at)).toBe(false);
    expect(verifyWebhook(body, delivery(standardSecret, nowSeconds - 3600), standardSecret, { ...at, toleranceSeconds: 3600 })).toBe(true);
  });

  it("rejects a tampered body, id or timestamp, another secret, and missing or malformed headers", () => {
    const headers = delivery();
    expect(verifyWebhook(body.replace("job_1", "job_2"), headers, standardSecret, at)).toBe(false);
    expect(verifyWebhook(body, { ...headers, "webhook-id": "del_other" }, standardSecret, at)).toBe(false);
    expect(verifyWebhook(body, { ...headers, "webhook-timestamp": String(nowSeconds - 1) }, standardSecret, at)).toBe(false);
    expect(verifyWebhook(body, { ...headers, "webhook-timestamp": `${nowSeconds}.0` }, standardSecret, at)).toBe(false);
    expect(verifyWebhook(body, headers, `whsec_${Buffer.from("another key").toString("base64")}`, at)).toBe(false);
    const { "webhook-id": _id, ...withoutId } = headers;
    expect(verifyWebhook(body, withoutId, standardSecret, at)).toBe(false);
    const { "webhook-timestamp": _timestamp, ...withoutTimestamp } = headers;
    expect(verifyWebhook(body, withoutTimestamp, standardSecret, at)).toBe(false);
    expect(verifyWebhook(body, { ...headers, "webhook-signature": headers["webhook-signature"]!.replace("v1,", "v2,") }, standardSecret, at)).toBe(false);
    expect(verifyWebhook(body, { ...headers, "webhook-signature": "v1,not base64!" }, standardSecret, at)).toBe(false);
    expect(verifyWebhook(body, { "x-renderbus-signature": headers["x-renderbus-signature"] }, standardSecret, { ...at, scheme: "standard" })).toBe(false);
  });

  it("accepts any v1 entry of several (a rotation) and either of several secrets", () => {
    const oldSecret = "whsec_b2xkIHNlY3JldA==";
    const rotated = { ...standardWebhookHeaders({ id, timestampSeconds: nowSeconds, body, secrets: [standardSecret, oldSecret] }) };
    expect(verifyWebhook(body, rotated, oldSecret, at)).toBe(true);
    expect(verifyWebhook(body, rotated, standardSecret, at)).toBe(true);
    expect(verifyWebhook(body, delivery(oldSecret), ["whsec_bmV3", oldSecret], at)).toBe(true);
    expect(verifyWebhook(body, delivery(oldSecret), ["whsec_bmV3"], at)).toBe(false);
  });

  it("constructWebhookEvent parses a verified standard delivery and throws on a stale one", () => {
    expect(constructWebhookEvent(body, delivery(), standardSecret, at)).toMatchObject({ jobId: "job_1" });
    expect(() => constructWebhookEvent(body, delivery(standardSecret, nowSeconds - 600), standardSecret, at)).toThrow(WebhookVerificationError);
  });
});
