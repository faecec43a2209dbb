import { createHmac, timingSafeEqual } from "node:crypto";
import type { WebhookPayload } from "./types.js";

/** Headers as Node (`req.headers`), fetch (`Headers`) or a plain object in any letter case give them. */
export type WebhookHeaders = Headers | Record<string, string | string[] | undefined>;
export type WebhookBody = string | Uint8Array | ArrayBuffer;

export interface VerifyWebhookOptions {
  /** Header brand of a self-hosted install that renamed it (`X-<brand>-Signature`); default "Renderbus". */
  brand?: string;
  /**
   * Which signature to check. `"auto"` (the default): the Standard Webhooks `webhook-signature` when the request
   * carries one (every Renderbus delivery does), else the seed's `X-Renderbus-Signature`. `"seed"` checks only the
   * seed's header, for instance when verifying a stored request long after it arrived; `"standard"` only the other.
   */
  scheme?: "auto" | "standard" | "seed";
  /** Standard Webhooks only: how far `webhook-timestamp` may be from now, either way; default 300 (5 minutes). */
  toleranceSeconds?: number;
  /** The current time in epoch milliseconds (tests); default `Date.now()`. */
  now?: number;
}

/** Thrown by `constructWebhookEvent` when a request does not carry a valid signature. */
export class WebhookVerificationError extends Error {
  override readonly name = "WebhookVerificationError";
}

const PREFIX = "sha256=";
const STANDARD_SECRET_PREFIX = "whsec_";
/** Padded standard base64, the form of a `whsec_` secret's key and of a `v1,` signature. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;
const DEFAULT_TOLERANCE_SECONDS = 5 * 60;

/**
 * Checks the signature of a webhook request. Renderbus signs every delivery twice, with the same secret:
 *
 * - Standard Webhooks (standardwebhooks.com): `webhook-signature: v1,<base64 HMAC-SHA256 of
 *   "{webhook-id}.{webhook-timestamp}.{raw body}">`, keyed with the base64-decoded part of a `whsec_` secret or the
 *   UTF-8 bytes of any other secret. Valid only while `webhook-timestamp` is within `toleranceSeconds` (5 minutes)
 *   of now, which bounds replays.
 * - The seed's: `X-Renderbus-Signature: sha256=<hex HMAC-SHA256 of the raw body bytes>` keyed with the secret string.
 *   It signs no timestamp, so deduplicate replays on `X-Renderbus-Delivery`.
 *
 * The scheme is picked by the headers present (`options.scheme`): a request carrying `webhook-signature` is judged
 * by it alone, never by the seed's header as a fallback, so an old request cannot slip past the timestamp check.
 * Both sign the raw body as received, never re-serialised JSON, and compare in constant time.
 *
 * `secret` may be a list (accept the old and the new secret while rotating); a header may carry several signatures
 * (space separated, commas too for the seed's, or a repeated header). Valid when any signature matches any secret.
 */
export function verifyWebhook(rawBody: WebhookBody, headers: WebhookHeaders, secret: string | readonly string[], options: VerifyWebhookOptions = {}): boolean {
  const secrets = (typeof secret === "string" ? [secret] : secret).filter((key) => key !== "");
  if (secrets.length === 0) return false;
  const scheme = options.scheme ?? "auto";
  const standard = headerValues(headers, "webhook-signature");
  if (scheme === "standard" || (scheme === "auto" && standard.length > 0)) {
    return verifyStandard(toBytes(rawBody), headers, standard, secrets, options);
  }
  const signatures = signaturesOf(headerValues(headers, `x-${(options.brand ?? "Renderbus").toLowerCase()}-signature`));
  if (signatures.length === 0) return false;
  const body = toBytes(rawBody);
  const expected = secrets.map((key) => createHmac("sha256", key).update(body).digest());
  return anyMatches(signatures, expected);
}

/** The Standard Webhooks check: id and timestamp present, timestamp within tolerance, any `v1,` entry matching. */
function verifyStandard(body: Uint8Array, headers: WebhookHeaders, values: string[], secrets: readonly string[], options: VerifyWebhookOptions): boolean {
  const id = headerValues(headers, "webhook-id")[0];
  const timestamp = headerValues(headers, "webhook-timestamp")[0];
  if (!id || !timestamp || !/^\d{1,15}$/.test(timestamp)) return false;
  const nowSeconds = Math.floor((options.now ?? Date.now()) / 1000);
  if (Math.abs(nowSeconds - Number(timestamp)) > (options.toleranceSeconds ?? DEFAULT_TOLERANCE_SECONDS)) return false;
  const signatures: Buffer[] = [];
  for (const entry of values.flatMap((value) => value.split(" "))) {
    const [version, signature] = entry.split(",", 2);
    if (version === "v1" && signature && BASE64.test(signature)) signatures.push(Buffer.from(signature, "base64"));
  }
  if (signatures.length === 0) return false;
  const expected = secrets.map((key) => createHmac("sha256", standardKeyOf(key)).update(`${id}.${timestamp}.`).update(body).digest());
  return anyMatches(signatures, expected);
}

/** The HMAC key of a secret for Standard Webhooks: the base64 after `whsec_`, else the secret's UTF-8 bytes. */
function standardKeyOf(secret: string): Buffer {
  const rest = secret.startsWith(STANDARD_SECRET_PREFIX) ? secret.slice(STANDARD_SECRET_PREFIX.length) : undefined;
  return rest && BASE64.test(rest) ? Buffer.from(rest, "base64") : Buffer.from(secret, "utf8");
}

/** Every given signature is compared with every expected digest (no early exit), so timing tells nothing. */
function anyMatches(given: readonly Buffer[], expected: readonly Buffer[]): boolean {
  let valid = false;
  for (const digest of expected) for (const signature of given) if (signature.length === digest.length && timingSafeEqual(signature, digest)) valid = true;
  return valid;
}

/** Verifies and parses a webhook: returns the typed payload, or throws WebhookVerificationError. */
export function constructWebhookEvent(rawBody: WebhookBody, headers: WebhookHeaders, secret: string | readonly string[], options: VerifyWebhookOptions = {}): WebhookPayload {
  if (!verifyWebhook(rawBody, headers, secret, options)) throw new WebhookVerificationError("Webhook signature does not match the body and secret (or its timestamp is outside the tolerance)");
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
