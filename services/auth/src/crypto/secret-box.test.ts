import { randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createSecretBox } from "./secret-box.js";

describe("secret box", () => {
  const box = createSecretBox(randomBytes(32));

  it("round-trips a secret without storing it in clear", () => {
    const sealed = box.seal("whsec_very-secret");
    expect(sealed).not.toContain("whsec_very-secret");
    expect(box.open(sealed)).toBe("whsec_very-secret");
  });

  it("refuses a value sealed with another key or tampered with", () => {
    const sealed = box.seal("s3cret");
    expect(() => createSecretBox(randomBytes(32)).open(sealed)).toThrow();
    const parts = sealed.split(":");
    parts[3] = Buffer.from("tampered").toString("base64");
    expect(() => box.open(parts.join(":"))).toThrow();
  });
});
