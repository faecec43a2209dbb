import { describe, expect, it } from "vitest";
import { signOutputUrl, verifyOutputSignature } from "./signed-url.js";

const secret = "test-secret";
const key = "org_1/job_1/output.mp4";

function queryOf(url: string): { expires: string; signature: string } {
  const parsed = new URL(url);
  return { expires: parsed.searchParams.get("expires") ?? "", signature: parsed.searchParams.get("signature") ?? "" };
}

describe("signed output URLs", () => {
  it("builds a URL under /outputs/ that verifies until it expires", () => {
    const url = signOutputUrl({ publicUrl: "http://localhost:3000/", key, expiresAt: 2_000, secret });
    expect(url).toMatch(/^http:\/\/localhost:3000\/outputs\/org_1\/job_1\/output\.mp4\?expires=2000&signature=[0-9a-f]{64}$/);
    expect(verifyOutputSignature({ key, ...queryOf(url), secret, now: 1_999 })).toBe(true);
  });

  it("rejects expired links", () => {
    const url = signOutputUrl({ publicUrl: "http://x", key, expiresAt: 2_000, secret });
    expect(verifyOutputSignature({ key, ...queryOf(url), secret, now: 2_000 })).toBe(false);
  });

  it("rejects another key, a changed expiry, a wrong secret or a malformed signature", () => {
    const url = signOutputUrl({ publicUrl: "http://x", key, expiresAt: 5_000, secret });
    const query = queryOf(url);
    expect(verifyOutputSignature({ key: "org_2/job_1/output.mp4", ...query, secret, now: 0 })).toBe(false);
    expect(verifyOutputSignature({ key, expires: "9000", signature: query.signature, secret, now: 0 })).toBe(false);
    expect(verifyOutputSignature({ key, ...query, secret: "other", now: 0 })).toBe(false);
    expect(verifyOutputSignature({ key, expires: query.expires, signature: "abc", secret, now: 0 })).toBe(false);
    expect(verifyOutputSignature({ key, expires: "1e9", signature: query.signature, secret, now: 0 })).toBe(false);
    expect(verifyOutputSignature({ key, expires: undefined, signature: undefined, secret, now: 0 })).toBe(false);
  });
});
