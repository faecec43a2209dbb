import { createCipheriv, createDecipheriv, randomBytes } from "node:crypto";

const VERSION = "v1";

/**
 * Encrypts and decrypts small secrets (webhook secrets) with AES-256-GCM. The stored form is
 * `v1:<iv>:<tag>:<ciphertext>` (base64 parts); the version prefix leaves room for key rotation.
 */
export interface SecretBox {
  seal(plaintext: string): string;
  /** @throws Error when the value was not sealed with this key or was tampered with. */
  open(sealed: string): string;
}

/** A SecretBox over a 32-byte key. */
export function createSecretBox(key: Buffer): SecretBox {
  if (key.length !== 32) throw new Error("secret box key must be 32 bytes");
  return {
    seal(plaintext) {
      const iv = randomBytes(12);
      const cipher = createCipheriv("aes-256-gcm", key, iv);
      const data = Buffer.concat([cipher.update(plaintext, "utf8"), cipher.final()]);
      return [VERSION, iv.toString("base64"), cipher.getAuthTag().toString("base64"), data.toString("base64")].join(":");
    },
    open(sealed) {
      const [version, iv, tag, data] = sealed.split(":");
      if (version !== VERSION || iv === undefined || tag === undefined || data === undefined) throw new Error("unknown sealed secret format");
      const decipher = createDecipheriv("aes-256-gcm", key, Buffer.from(iv, "base64"));
      decipher.setAuthTag(Buffer.from(tag, "base64"));
      return Buffer.concat([decipher.update(Buffer.from(data, "base64")), decipher.final()]).toString("utf8");
    },
  };
}
