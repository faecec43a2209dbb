import { createHmac, timingSafeEqual } from "node:crypto";

function signatureOf(key: string, expires: number, secret: string): string {
  return createHmac("sha256", secret).update(`${key}\n${expires}`).digest("hex");
}

/**
 * A download URL for a stored output that is valid until `expiresAt` (epoch ms):
 * `${publicUrl}/outputs/${key}?expires=<ms>&signature=<hex HMAC-SHA256 of "key\nexpires">`.
 */
export function signOutputUrl({ publicUrl, key, expiresAt, secret }: {
  publicUrl: string;
  key: string;
  expiresAt: number;
  secret: string;
}): string {
  const expires = Math.floor(expiresAt);
  const encodedKey = key.split("/").map(encodeURIComponent).join("/");
  return `${publicUrl.replace(/\/+$/, "")}/outputs/${encodedKey}?expires=${expires}&signature=${signatureOf(key, expires, secret)}`;
}

/**
 * Whether a download request's `expires` and `signature` query values are valid for `key` (the decoded path after
 * `/outputs/`). Rejects expired links, malformed values and wrong signatures; compares in constant time.
 */
export function verifyOutputSignature({ key, expires, signature, secret, now = Date.now() }: {
  key: string;
  expires: string | number | undefined;
  signature: string | undefined;
  secret: string;
  now?: number;
}): boolean {
  if (expires === undefined || signature === undefined) return false;
  const expiresAt = typeof expires === "number" ? expires : /^\d{1,16}$/.test(expires) ? Number(expires) : Number.NaN;
  if (!Number.isSafeInteger(expiresAt) || expiresAt <= now) return false;
  if (!/^[0-9a-f]{64}$/.test(signature)) return false;
  const expected = Buffer.from(signatureOf(key, expiresAt, secret), "hex");
  return timingSafeEqual(expected, Buffer.from(signature, "hex"));
}
