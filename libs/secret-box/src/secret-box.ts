import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

/** One key of the keyring: its id travels in every envelope it seals, so the right key opens it after a rotation. */
export interface SecretKey {
  kid: string;
  /** 32 bytes (AES-256). */
  key: Buffer;
}

/** Keys newest first: the first seals, every one opens what it sealed. */
export type SecretKeyring = readonly SecretKey[];

/** The kid of the single-key form (SECRETS_ENCRYPTION_KEY); name the old key so in SECRETS_ENCRYPTION_KEYS to rotate. */
export const SINGLE_KEY_KID = "default";

const KID_PATTERN = /^[A-Za-z0-9_.-]{1,64}$/;
const AUTH_TAG_BYTES = 16;
const IV_BYTES = 12;

/** Thrown when a keyring value or key is malformed; the message says what is wrong, never the key. */
export class SecretKeyringError extends Error {
  override readonly name = "SecretKeyringError";
}

/**
 * Parses `kid:base64key,kid:base64key,...` (newest first). Each key must decode to 32 bytes and each kid be unique,
 * made of letters, digits, `_`, `.` or `-`.
 */
export function parseSecretKeyring(value: string): SecretKeyring {
  const entries = value.split(",").map((entry) => entry.trim()).filter(Boolean);
  if (entries.length === 0) throw new SecretKeyringError("must list at least one kid:key");
  const keyring = entries.map((entry) => {
    const separator = entry.indexOf(":");
    const kid = entry.slice(0, separator);
    if (separator < 0 || !KID_PATTERN.test(kid)) throw new SecretKeyringError("each entry must be kid:base64key with a kid of letters, digits, _ . -");
    const key = Buffer.from(entry.slice(separator + 1), "base64");
    if (key.length !== 32) throw new SecretKeyringError(`key ${kid} must be 32 bytes encoded as base64`);
    return { kid, key };
  });
  const kids = new Set(keyring.map((entry) => entry.kid));
  if (kids.size !== keyring.length) throw new SecretKeyringError("kids must be unique");
  return keyring;
}

/**
 * Encrypts and decrypts small secrets (webhook secrets) with AES-256-GCM, each bound to its org: the org id is the
 * additional authenticated data, so a ciphertext copied to another org's row does not open there. The stored form
 * is `v2:<kid>:<iv>:<tag>:<ciphertext>` (base64 parts, 16-byte tag). `v1:<iv>:<tag>:<ciphertext>` values (no kid,
 * no AAD) written before keyrings existed still open, with any configured key; `secrets:reencrypt` rewrites them.
 */
export interface SecretBox {
  /** The kid new values are sealed with (the keyring's first). */
  readonly currentKid: string;
  seal(plaintext: string, orgId: string): string;
  /** @throws Error when the value was not sealed for this org with a configured key, or was tampered with. */
  open(sealed: string, orgId: string): string;
  /** Whether a stored value is already in the current form under the current key (nothing to re-encrypt). */
  isCurrent(sealed: string): boolean;
}

function decrypt(key: Buffer, iv: string, tag: string, data: string, aad: Buffer | undefined): string {
  const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64"), { authTagLength: AUTH_TAG_BYTES });
  if (aad) decipher.setAAD(aad);
  const tagBytes = Buffer.from(tag, "base64");
  if (tagBytes.length !== AUTH_TAG_BYTES) throw new Error("sealed secret has a malformed tag");
  decipher.setAuthTag(tagBytes);
  return Buffer.concat([decipher.update(Buffer.from(data, "base64")), decipher.final()]).toString("utf8");
}

/**
 * A SecretBox over a keyring (newest first), or over one 32-byte key (kid {@link SINGLE_KEY_KID}). With
 * `acceptV1: false` (SECRETS_ACCEPT_V1), values of the first format no longer open.
 */
export function createSecretBox(keys: SecretKeyring | Buffer, { acceptV1 = true }: { acceptV1?: boolean } = {}): SecretBox {
  const keyring: SecretKeyring = Buffer.isBuffer(keys) ? [{ kid: SINGLE_KEY_KID, key: keys }] : keys;
  if (keyring.length === 0) throw new SecretKeyringError("secret box needs at least one key");
  for (const { kid, key } of keyring) {
    if (key.length !== 32) throw new SecretKeyringError(`secret box key ${kid} must be 32 bytes`);
    if (!KID_PATTERN.test(kid)) throw new SecretKeyringError("secret box kids are letters, digits, _ . -");
  }
  const current = keyring[0]!;
  const byKid = new Map(keyring.map((entry) => [entry.kid, entry.key]));
  const aadOf = (orgId: string) => Buffer.from(orgId, "utf8");
  return {
    currentKid: current.kid,
    seal(plaintext, orgId) {
      const iv = randomBytes(IV_BYTES);
      const cipher = createCipheriv("aes-256-gcm", current.key, iv, { authTagLength: AUTH_TAG_BYTES });
      cipher.setAAD(aadOf(orgId));
      const data = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return ["v2", current.kid, iv.toString("base64"), cipher.getAuthTag().toString("base64"), data.toString("base64")].join(":");
    },
    open(sealed, orgId) {
      const parts = sealed.split(":");
      if (parts[0] === "v2" && parts.length === 5) {
        const [, kid, iv, tag, data] = parts as [string, string, string, string, string];
        const key = byKid.get(kid);
        if (!key) throw new Error(`sealed with key "${kid}", which is not configured (SECRETS_ENCRYPTION_KEYS)`);
        return decrypt(key, iv, tag, data, aadOf(orgId));
      }
      if (parts[0] === "v1" && parts.length === 4) {
        if (!acceptV1) throw new Error("a v1 sealed secret (not bound to its org), refused with SECRETS_ACCEPT_V1=false; re-encrypt it with secrets:reencrypt");
        const [, iv, tag, data] = parts as [string, string, string, string];
        for (const { key } of keyring) {
          try {
            return decrypt(key, iv, tag, data, undefined);
          } catch {
            // Another key may have sealed it: v1 carries no kid.
          }
        }
        throw new Error("no configured key opens this v1 sealed secret");
      }
      throw new Error("unknown sealed secret format");
    },
    isCurrent(sealed) {
      return sealed.startsWith(`v2:${current.kid}:`);
    },
  };
}
