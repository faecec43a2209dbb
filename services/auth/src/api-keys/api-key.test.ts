import { describe, expect, it } from "vitest";
import { generateApiKey, hashApiKey, isWellFormedApiKey, keyStart, validKeyName } from "./api-key.js";

describe("api key format", () => {
  it("generates rb_ keys with 32 random bytes that are well formed and distinct", () => {
    const key = generateApiKey();
    expect(key).toMatch(/^rb_[A-Za-z0-9_-]{43}$/);
    expect(Buffer.from(key.slice(3), "base64url")).toHaveLength(32);
    expect(isWellFormedApiKey(key)).toBe(true);
    expect(generateApiKey()).not.toBe(key);
  });

  it("hashes keys as SHA-256 hex and shows only the first 8 characters", () => {
    const key = generateApiKey();
    expect(hashApiKey(key)).toMatch(/^[0-9a-f]{64}$/);
    expect(keyStart(key)).toBe(key.slice(0, 8));
  });

  it("rejects malformed keys", () => {
    for (const value of ["", "rb_", "sk_" + "a".repeat(43), "rb_" + "a".repeat(42), "rb_" + "!".repeat(43), "Bearer rb_x"]) {
      expect(isWellFormedApiKey(value)).toBe(false);
    }
  });

  it("accepts names of 1 to 100 characters", () => {
    expect(validKeyName(" ci ")).toBe("ci");
    expect(validKeyName("")).toBeUndefined();
    expect(validKeyName("x".repeat(101))).toBeUndefined();
  });
});
