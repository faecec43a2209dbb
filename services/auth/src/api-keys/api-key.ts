import { createHash, randomBytes } from "node:crypto";

/** `rb_` + base64url of 32 random bytes (43 characters). */
const KEY_PATTERN = /^rb_[A-Za-z0-9_-]{43}$/;

/** A new API key in clear: shown to its creator once, then only its hash is kept. */
export function generateApiKey(): string {
  return `rb_${randomBytes(32).toString("base64url")}`;
}

/** SHA-256 hex of a key: its stored form and the gateway's cache key. */
export function hashApiKey(key: string): string {
  return createHash("sha256").update(key).digest("hex");
}

/** The first characters of a key, safe to display so users can tell keys apart. */
export function keyStart(key: string): string {
  return key.slice(0, 8);
}

/** True for strings shaped like our keys; anything else is rejected before touching the database. */
export function isWellFormedApiKey(value: string): boolean {
  return KEY_PATTERN.test(value);
}

/** Name rule of API keys: required, 1-100 characters. Returns the trimmed name or undefined when invalid. */
export function validKeyName(name: string): string | undefined {
  const trimmed = name.trim();
  return trimmed.length >= 1 && trimmed.length <= 100 ? trimmed : undefined;
}
