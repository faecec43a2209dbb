import { createHmac, timingSafeEqual } from "node:crypto";

/**
 * Webhook signing as in the seed's section 6: `sha256=<hex HMAC-SHA256 of the raw body bytes, key = secret>`.
 * Used by the dispatcher to sign and by the SDK and tests to verify, so both sides share one implementation.
 */
export function signatureOf(rawBody: string | Uint8Array, secret: string): string {
  return `sha256=${createHmac("sha256", secret).update(rawBody).digest("hex")}`;
}

/** Timing-safe check of a signature header against the raw body. */
export function verifySignature(rawBody: string | Uint8Array, header: string | undefined | null, secret: string): boolean {
  if (!header || !header.startsWith("sha256=")) return false;
  const expected = Buffer.from(signatureOf(rawBody, secret).slice("sha256=".length), "hex");
  const given = Buffer.from(header.slice("sha256=".length), "hex");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** Header names for a brand (WEBHOOK_HEADER_BRAND, docs/webhooks.md: configurable so receivers written for another brand keep working). */
export function webhookHeaderNames(brand = "Renderbus") {
  return {
    signature: `X-${brand}-Signature`,
    event: `X-${brand}-Event`,
    delivery: `X-${brand}-Delivery`,
    attempt: `X-${brand}-Attempt`,
    timestamp: `X-${brand}-Timestamp`,
  } as const;
}

export { standardWebhookHeaders, standardWebhookKey, type StandardWebhookHeaders } from "./standard-webhooks.js";
