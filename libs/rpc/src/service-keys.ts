import { createHmac, createPrivateKey, createPublicKey, type KeyObject } from "node:crypto";
import { z } from "zod";
import { ConfigError } from "@renderbus/config";

/** The services that call each other over gRPC; a call token's `iss`, `aud` and (for service calls) `sub`. */
export const SERVICE_NAMES = ["gateway", "auth", "jobs", "webhook-dispatcher", "worker"] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

export const isServiceName = (value: unknown): value is ServiceName => typeof value === "string" && (SERVICE_NAMES as readonly string[]).includes(value);

/**
 * One Ed25519 key of a service, named by `kid` so keys can rotate. A service holds the private half of its own key
 * only; of its callers it holds the public halves, which verify their tokens but cannot sign one.
 */
export interface ServiceKey {
  service: ServiceName;
  kid: string;
  publicKey: KeyObject;
  /** Only in the service's own entries (`private:`). */
  privateKey?: KeyObject;
}

/**
 * The keys a process knows, per issuing service, newest first: a service signs with the first private key listed for
 * itself and accepts a token of any issuer whose `kid` is listed for that issuer.
 */
export type ServiceKeyring = ReadonlyMap<ServiceName, readonly ServiceKey[]>;

/** The environment variable holding the keys (named in every error about them). */
export const SERVICE_TOKEN_KEYS = "SERVICE_TOKEN_KEYS";

const KID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
const BASE64URL_32_BYTES = /^[A-Za-z0-9_-]{43}$/;
// DER prefixes that make a raw 32-byte Ed25519 seed a PKCS#8 key and a raw public key an SPKI key (RFC 8410).
const PKCS8_PREFIX = Buffer.from("302e020100300506032b657004220420", "hex");
const SPKI_PREFIX = Buffer.from("302a300506032b6570032100", "hex");

/** The key pair of a 32-byte Ed25519 seed. */
export function ed25519KeyOf(seed: Buffer): { privateKey: KeyObject; publicKey: KeyObject } {
  const privateKey = createPrivateKey({ key: Buffer.concat([PKCS8_PREFIX, seed]), format: "der", type: "pkcs8" });
  return { privateKey, publicKey: createPublicKey(privateKey) };
}

/** A public key as its 32 raw bytes, base64url: the form `service:kid:public:<key>` entries take. */
export function rawPublicKeyOf(publicKey: KeyObject): string {
  return publicKey.export({ format: "der", type: "spki" }).subarray(SPKI_PREFIX.length).toString("base64url");
}

/**
 * Parses `service:kid:private:<seed>` and `service:kid:public:<key>` entries, comma-separated (whitespace around
 * entries ignored): the seed is a service's own 32-byte Ed25519 private key, the key a caller's 32-byte public key,
 * both base64url (`npm run service-keys` prints a set). Throws an Error saying which entry is wrong, without
 * echoing any key.
 */
export function parseServiceTokenKeys(value: string): ServiceKeyring {
  const keyring = new Map<ServiceName, ServiceKey[]>();
  const entries = value
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  if (entries.length === 0) throw new Error("must list at least one service:kid:private:<seed> entry");
  entries.forEach((entry, index) => {
    const [service, kid, half, material = "", ...rest] = entry.split(":");
    const where = `entry ${index + 1}`;
    if (!isServiceName(service)) throw new Error(`${where}: service must be one of ${SERVICE_NAMES.join(", ")}`);
    if (!kid || !KID_PATTERN.test(kid)) throw new Error(`${where} (${service}): kid must be 1-64 of A-Z a-z 0-9 . _ -`);
    // `service:kid:secret`: the shared HMAC secrets of releases before 2026-12-01, which every service could sign with.
    if (half !== "private" && half !== "public" && material === "" && rest.length === 0)
      throw new Error(`${where} (${service}:${kid}): shared secrets (service:kid:secret) are no longer accepted; run npm run service-keys and give each service its own line (docs/operations.md, "Internal authentication")`);
    if (half !== "private" && half !== "public") throw new Error(`${where} (${service}:${kid}): must be service:kid:private:<seed> or service:kid:public:<key>`);
    if (rest.length > 0 || !BASE64URL_32_BYTES.test(material)) throw new Error(`${where} (${service}:${kid}): the ${half} key must be 32 bytes, base64url (43 characters)`);
    const bytes = Buffer.from(material, "base64url");
    let key: ServiceKey;
    try {
      key = half === "private" ? { service, kid, ...ed25519KeyOf(bytes) } : { service, kid, publicKey: createPublicKey({ key: Buffer.concat([SPKI_PREFIX, bytes]), format: "der", type: "spki" }) };
    } catch {
      throw new Error(`${where} (${service}:${kid}): not a valid Ed25519 ${half} key`);
    }
    const keys = keyring.get(service) ?? [];
    if (keys.some((existing) => existing.kid === kid)) throw new Error(`${where}: ${service}:${kid} is listed twice`);
    keys.push(key);
    keyring.set(service, keys);
  });
  return keyring;
}

// Development and tests only: every process derives the same keys from this seed, so `npm start` and test systems
// agree without passing keys around. Production refuses these values (serviceKeyringOf).
const DEV_SEED = "renderbus-development-service-token-seed-not-for-production";
const DEV_KID = "dev";
const devSeedOf = (service: ServiceName) => createHmac("sha256", DEV_SEED).update(service).digest();

/** The development keys of every service (private halves of all: development only), in SERVICE_TOKEN_KEYS format. */
export function devServiceTokenKeys(): string {
  return SERVICE_NAMES.map((service) => `${service}:${DEV_KID}:private:${devSeedOf(service).toString("base64url")}`).join(",");
}

/** Format check for service config schemas; the production rules need MODE and the service, see serviceKeyringOf. */
export const serviceTokenKeysVariable = () =>
  z
    .string()
    .optional()
    .superRefine((value, context) => {
      if (value === undefined || value.trim() === "") return; // unset: development keys, or refused in production
      try {
        parseServiceTokenKeys(value);
      } catch (error) {
        context.addIssue({ code: "custom", message: (error as Error).message });
      }
    });

/**
 * The keyring of `service` from its config: SERVICE_TOKEN_KEYS when set; when unset and MODE is not production,
 * the derived development keys. Throws ConfigError naming SERVICE_TOKEN_KEYS in production when it is unset, holds a
 * development key, lacks a private key for `service` itself, or holds another service's private key (which would let
 * this one sign as that one).
 */
export function serviceKeyringOf(service: ServiceName, config: { MODE?: string; SERVICE_TOKEN_KEYS?: string | undefined }): ServiceKeyring {
  const fail = (message: string): never => {
    throw new ConfigError([{ variable: SERVICE_TOKEN_KEYS, message }]);
  };
  const production = config.MODE === "production";
  const configured = config.SERVICE_TOKEN_KEYS?.trim();
  if (!configured) {
    if (production) fail("is required in production (this service's private key and its callers' public keys)");
    return parseServiceTokenKeys(devServiceTokenKeys());
  }
  let keyring: ServiceKeyring = new Map();
  try {
    keyring = parseServiceTokenKeys(configured);
  } catch (error) {
    fail((error as Error).message);
  }
  if (production) {
    const devKeys = new Set(SERVICE_NAMES.map((name) => rawPublicKeyOf(ed25519KeyOf(devSeedOf(name)).publicKey)));
    for (const keys of keyring.values()) {
      for (const key of keys) {
        if (devKeys.has(rawPublicKeyOf(key.publicKey))) fail(`${key.service}:${key.kid} is a development key; generate real ones for production`);
        if (key.privateKey && key.service !== service) fail(`holds the private key of ${key.service}:${key.kid}: ${service} must hold only the public keys of other services`);
      }
    }
  }
  if (!keyring.get(service)?.some((key) => key.privateKey)) fail(`has no private key for ${service} itself (the first ${service}:kid:private:<seed> entry signs its calls)`);
  return keyring;
}
