import { createCipheriv, randomBytes } from "node:crypto";
import { describe, expect, it } from "vitest";
import { createSecretBox, parseSecretKeyring, SINGLE_KEY_KID } from "./secret-box.js";

const ORG = "org_01JAAAAAAAAAAAAAAAAAAAAAAA";
const OTHER_ORG = "org_01JBBBBBBBBBBBBBBBBBBBBBBB";

/** A value in the pre-keyring form `v1:<iv>:<tag>:<ciphertext>` (no kid, no AAD), as rows written before hold it. */
function sealV1(key: Buffer, plaintext: string): string {
  const iv = randomBytes(12);
  const cipher = createCipheriv("aes-256-gcm", key, iv);
  const data = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
  return ["v1", iv.toString("base64"), cipher.getAuthTag().toString("base64"), data.toString("base64")].join(":");
}

describe("secret box", () => {
  const box = createSecretBox(randomBytes(32));

  it("round-trips a secret without storing it in clear", () => {
    const sealed = box.seal("whsec_very-secret", ORG);
    expect(sealed).not.toContain("whsec_very-secret");
    expect(box.open(sealed, ORG)).toBe("whsec_very-secret");
  });

  it("refuses a value sealed with another key or tampered with", () => {
    const sealed = box.seal("s3cret", ORG);
    expect(() => createSecretBox(randomBytes(32)).open(sealed, ORG)).toThrow();
    const parts = sealed.split(":");
    parts[4] = Buffer.from("tampered").toString("base64");
    expect(() => box.open(parts.join(":"), ORG)).toThrow();
  });

  it("binds a value to its org: a ciphertext moved to another org's row does not open", () => {
    const sealed = box.seal("s3cret", ORG);
    expect(() => box.open(sealed, OTHER_ORG)).toThrow();
    expect(box.open(sealed, ORG)).toBe("s3cret");
  });

  it("refuses a truncated authentication tag (the tag length is pinned to 16 bytes)", () => {
    const parts = box.seal("s3cret", ORG).split(":");
    parts[3] = Buffer.from(parts[3]!, "base64").subarray(0, 4).toString("base64");
    expect(() => box.open(parts.join(":"), ORG)).toThrow();
  });

  it("writes the envelope v2:<kid>:<iv>:<tag>:<ciphertext> with the single key's kid", () => {
    const [version, kid, iv, tag] = box.seal("s3cret", ORG).split(":");
    expect([version, kid]).toEqual(["v2", SINGLE_KEY_KID]);
    expect(Buffer.from(iv!, "base64")).toHaveLength(12);
    expect(Buffer.from(tag!, "base64")).toHaveLength(16);
  });
});

describe("keyring", () => {
  const oldKey = randomBytes(32);
  const newKey = randomBytes(32);

  it("seals with the newest key and opens with any configured one", () => {
    const before = createSecretBox([{ kid: "2026-01", key: oldKey }]);
    const sealedBefore = before.seal("s3cret", ORG);
    const rotated = createSecretBox(parseSecretKeyring(`2026-11:${newKey.toString("base64")},2026-01:${oldKey.toString("base64")}`));
    expect(rotated.currentKid).toBe("2026-11");
    expect(rotated.open(sealedBefore, ORG)).toBe("s3cret");
    const sealedAfter = rotated.seal("s3cret", ORG);
    expect(sealedAfter.split(":")[1]).toBe("2026-11");
    expect(rotated.isCurrent(sealedAfter)).toBe(true);
    expect(rotated.isCurrent(sealedBefore)).toBe(false);
    // Once the old key is removed, only values re-encrypted under the new one open.
    const newOnly = createSecretBox([{ kid: "2026-11", key: newKey }]);
    expect(newOnly.open(sealedAfter, ORG)).toBe("s3cret");
    expect(() => newOnly.open(sealedBefore, ORG)).toThrow(/key "2026-01", which is not configured/);
  });

  it("still opens v1 values (no kid, no AAD) with whichever configured key sealed them", () => {
    const legacy = sealV1(oldKey, "whsec_legacy");
    const rotated = createSecretBox([{ kid: "new", key: newKey }, { kid: SINGLE_KEY_KID, key: oldKey }]);
    expect(rotated.open(legacy, ORG)).toBe("whsec_legacy");
    expect(rotated.isCurrent(legacy)).toBe(false);
    expect(() => createSecretBox(newKey).open(legacy, ORG)).toThrow(/no configured key/);
  });

  it("refuses v1 values with acceptV1 false (SECRETS_ACCEPT_V1=false, once every stored one was re-encrypted)", () => {
    const legacy = sealV1(oldKey, "whsec_legacy");
    const strict = createSecretBox([{ kid: SINGLE_KEY_KID, key: oldKey }], { acceptV1: false });
    expect(() => strict.open(legacy, ORG)).toThrow(/SECRETS_ACCEPT_V1=false/);
    expect(strict.open(strict.seal("whsec_current", ORG), ORG)).toBe("whsec_current");
  });

  it.each([
    ["", /at least one/],
    ["nokid", /kid:base64key/],
    [`bad kid:${randomBytes(32).toString("base64")}`, /kid:base64key/],
    ["k1:c2hvcnQ=", /key k1 must be 32 bytes/],
    [`k1:${randomBytes(32).toString("base64")},k1:${randomBytes(32).toString("base64")}`, /unique/],
  ])("refuses the keyring %j", (value, message) => {
    expect(() => parseSecretKeyring(value)).toThrow(message);
  });

  it("never puts key material in its error messages", () => {
    const key = randomBytes(16).toString("base64");
    expect(() => parseSecretKeyring(`k1:${key}`)).toThrow(expect.objectContaining({ message: expect.not.stringContaining(key) }));
  });
});
