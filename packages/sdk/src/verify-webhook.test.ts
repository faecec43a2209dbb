import { describe, expect, it } from "vitest";
// The dispatcher's signer (test-only import: the SDK itself must not depend on @renderbus/* at runtime).
import { signatureOf } from "@renderbus/webhook-signing";
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
