import { createHmac, timingSafeEqual } from "node:crypto";
import type { WebhookPayload } from "./types.js";

/** Headers as Node (`req.headers`), fetch (`Headers`) or a plain object in any letter case give them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;
export type WebhookBody = string | Uint8Array | ArrayBuffer;

export interface VerifyWebhookOptions {
  /** Header brand of a self-hosted install that renamed it (`X-<brand>-Signature`); default "Renderbus". */
  brand?: string;
}

/** Thrown by `constructWebhookEvent` when a request does not carry a valid signature. */
export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
}

const PREFIX = "sha256=";

/**
 * Checks the signature of a webhook request, following the seed's steps exactly: HMAC-SHA256 over the raw body
 * bytes as received (never re-serialised JSON) with the webhook secret as key, hex digest, compared with the header
 * value minus `sha256=` in constant time.
 *
 * `secret` may be a list (accept the old and the new secret while rotating); the header may carry several
 * comma- or space-separated `sha256=` values (or arrive as a repeated header). It is valid when any value matches
 * any secret. The protocol signs no timestamp, so deduplicate replays on `X-Renderbus-Delivery`.
 */
export function verifyWebhook(rawBody: WebhookBody, headers: WebhookHeaders, secret: string | readonly string[], options: VerifyWebhookOptions = {}): boolean {
  const signatures = signaturesOf(headerValues(headers, `x-${(options.brand ?? "Renderbus").toLowerCase()}-signature`));
  if (signatures.length === 0) return false;
  const body = toBytes(rawBody);
  let valid = false;
  for (const key of typeof secret === "string" ? [secret] : secret) {
    if (!key) continue;
    const expected = createHmac("sha256", key).update(body).digest();
    // Every candidate is compared (no early exit), so timing does not reveal which one matched.
    for (const given of signatures) if (given.length === expected.length && timingSafeEqual(given, expected)) valid = true;
  }
  return valid;
}

/** Verifies and parses a webhook: returns the typed payload, or throws WebhookVerificationError. */
export function constructWebhookEvent(rawBody: WebhookBody, headers: WebhookHeaders, secret: string | readonly string[], options: VerifyWebhookOptions = {}): WebhookPayload {
  if (!verifyWebhook(rawBody, headers, secret, options)) throw new WebhookVerificationError("Webhook signature does not match the body and secret");
  return JSON.parse(Buffer.from(toBytes(rawBody)).toString("utf8")) as WebhookPayload;
}

function toBytes(body: WebhookBody): Uint8Array {
  if (typeof body === "string") return Buffer.from(body, "utf8");
  return body instanceof ArrayBuffer ? new Uint8Array(body) : body;
}

function headerValues(headers: WebhookHeaders, name: string): string[] {
  if (typeof (headers as Headers).get === "function" && typeof (headers as Headers).has === "function") {
    const value = (headers as Headers).get(name);
    return value === null ? [] : [value];
  }
  const values: string[] = [];
  for (const [key, value] of Object.entries(headers as Record<string, string | string[] | undefined>)) {
    if (key.toLowerCase() !== name || value === undefined) continue;
    values.push(...(Array.isArray(value) ? value : [value]));
  }
  return values;
}

/** Decoded digests of every well-formed `sha256=<64 hex>` value; malformed values are ignored. */
function signaturesOf(values: string[]): Buffer[] {
  const digests: Buffer[] = [];
  for (const part of values.flatMap((value) => value.split(/[\s,]+/))) {
    if (!part.startsWith(PREFIX)) continue;
    const hex = part.slice(PREFIX.length);
    if (/^[0-9a-fA-F]{64}$/.test(hex)) digests.push(Buffer.from(hex, "hex"));
  }
  return digests;
}
