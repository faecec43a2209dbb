import { createHmac, createSecretKey, type KeyObject } from "node:crypto";

/** The Standard Webhooks (standardwebhooks.com) headers sent beside the seed's own. */
export interface StandardWebhookHeaders {
  /** The message id: the delivery id (`del_...`), stable across attempts, so receivers dedupe on it. */
  "webhook-id": string;
  /** When the attempt was signed, in unix seconds. */
  "webhook-timestamp": string;
  /**
   * `v1,<base64 HMAC-SHA256 of "{id}.{timestamp}.{body}">`, one entry per secret, space separated; absent without a
   * secret (as the seed's signature header is).
   */
  "webhook-signature"?: string;
}

const SECRET_PREFIX = "whsec_";
/** Padded standard base64, the form Standard Webhooks libraries decode. */
const BASE64 = /^(?:[A-Za-z0-9+/]{4})*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/;

/**
 * The HMAC key of a secret: the base64-decoded part of a `whsec_<base64>` secret, else the secret's UTF-8 bytes.
 * A `whsec_` secret whose rest is not padded base64 (or is empty) is used as UTF-8 bytes too, so it still signs.
 */
export function standardWebhookKey(secret: string): Buffer {
  const rest = secret.startsWith(SECRET_PREFIX) ? secret.slice(SECRET_PREFIX.length) : undefined;
  if (rest && BASE64.test(rest)) return Buffer.from(rest, "base64");
  return Buffer.from(secret, "utf8");
}

/** Secrets seen recently, as key objects; cleared whole when full (a rotation or a new endpoint refills it). */
const signingKeys = new Map<string, KeyObject>();
const MAX_SIGNING_KEYS = 1000;

/**
 * The secret's key as a KeyObject, made once: on Node 24 an HMAC keyed by a Buffer costs ~16 us (the Buffer is
 * turned into a key object every time) against ~3 us with a KeyObject, and every attempt signs.
 */
function signingKey(secret: string): KeyObject {
  let key = signingKeys.get(secret);
  if (!key) {
    if (signingKeys.size >= MAX_SIGNING_KEYS) signingKeys.clear();
    key = createSecretKey(standardWebhookKey(secret));
    signingKeys.set(secret, key);
  }
  return key;
}

/**
 * Signs a delivery the Standard Webhooks way: HMAC-SHA256 over `{id}.{timestamp}.{body}` (the exact body string,
 * as UTF-8), once per secret (several while a secret rotates). Empty secrets are skipped; with none left there is no
 * `webhook-signature`, as the seed's signature header is left out then, but the id and timestamp are still sent.
 */
export function standardWebhookHeaders({
  id,
  timestampSeconds,
  body,
  secrets,
}: {
  id: string;
  timestampSeconds: number;
  body: string | Uint8Array;
  secrets: readonly string[];
}): StandardWebhookHeaders {
  const timestamp = String(Math.floor(timestampSeconds));
  const keys = secrets.filter((secret) => secret !== "").map(signingKey);
  if (keys.length === 0) return { "webhook-id": id, "webhook-timestamp": timestamp };
  const signatures = keys.map((key) => `v1,${createHmac("sha256", key).update(`${id}.${timestamp}.`).update(body).digest("base64")}`);
  return { "webhook-id": id, "webhook-timestamp": timestamp, "webhook-signature": signatures.join(" ") };
}
