import { describe, expect, it } from "vitest";
import { signatureOf, verifySignature, webhookHeaderNames } from "./index.js";

describe("signatureOf", () => {
  it("matches the RFC 4231 HMAC-SHA256 test vector (case 2)", () => {
    expect(signatureOf("what do ya want for nothing?", "Jefe")).toBe(
      "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843",
    );
  });

  it("signs the raw bytes: a string and its UTF-8 bytes give the same signature", () => {
    const body = '{"event":"job.completed","name":"café"}';
    expect(signatureOf(new TextEncoder().encode(body), "s3cret")).toBe(signatureOf(body, "s3cret"));
  });
});

describe("verifySignature", () => {
  const body = '{"event":"job.completed","job":{"id":"job_1"}}';
  const secret = "whsec_test";
  const header = signatureOf(body, secret);

  it("accepts the signature of the exact body", () => {
    expect(verifySignature(body, header, secret)).toBe(true);
  });

  it("rejects a tampered body, another secret, a truncated or longer signature, and a missing header", () => {
    expect(verifySignature(body.replace("job_1", "job_2"), header, secret)).toBe(false);
    expect(verifySignature(`${body} `, header, secret)).toBe(false);
    expect(verifySignature(body, header, "other")).toBe(false);
    expect(verifySignature(body, header.slice(0, -2), secret)).toBe(false);
    expect(verifySignature(body, `${header}00`, secret)).toBe(false);
    expect(verifySignature(body, header.replace("sha256=", "sha1="), secret)).toBe(false);
    expect(verifySignature(body, "", secret)).toBe(false);
    expect(verifySignature(body, undefined, secret)).toBe(false);
    expect(verifySignature(body, null, secret)).toBe(false);
  });
});

describe("webhookHeaderNames", () => {
  it("names the headers after the brand", () => {
    expect(webhookHeaderNames()).toEqual({
      signature: "X-Renderbus-Signature",
      event: "X-Renderbus-Event",
      delivery: "X-Renderbus-Delivery",
      attempt: "X-Renderbus-Attempt",
      timestamp: "X-Renderbus-Timestamp",
    });
    expect(webhookHeaderNames("Acme").signature).toBe("X-Acme-Signature");
  });
});
