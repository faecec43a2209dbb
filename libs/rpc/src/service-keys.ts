import { createHmac } from "node:crypto";
import { z } from "zod";
import { ConfigError } from "@renderbus/config";

/** The services that call each other over gRPC; a call token's `iss`, `aud` and (for service calls) `sub`. */
export const SERVICE_NAMES = ["gateway", "auth", "jobs", "webhook-dispatcher", "worker"] as const;
export type ServiceName = (typeof SERVICE_NAMES)[number];

export const isServiceName = (value: unknown): value is ServiceName => typeof value === "string" && (SERVICE_NAMES as readonly string[]).includes(value);

/** One HS256 key a service signs its call tokens with, named by `kid` so keys can rotate. */
export interface ServiceKey {
  service: ServiceName;
  kid: string;
  secret: Uint8Array;
}

/**
 * The keys a process knows, per issuing service, newest first: a service signs with the first key listed for itself
 * and accepts a token of any issuer whose `kid` is listed for that issuer.
 */
export type ServiceKeyring = ReadonlyMap<ServiceName, readonly ServiceKey[]>;

/** The environment variable holding the keys (named in every error about them). */
export const SERVICE_TOKEN_KEYS = "SERVICE_TOKEN_KEYS";

const KID_PATTERN = /^[A-Za-z0-9._-]{1,64}$/;
const MIN_SECRET_LENGTH = 32;

/**
 * Parses `service:kid:secret,service:kid:secret,...` (whitespace around entries ignored). The secret is everything
 * after the second colon, at least 32 characters (e.g. `openssl rand -base64 32`). Throws an Error saying which
 * entry is wrong, without echoing any secret.
 */
export function parseServiceTokenKeys(value: string): ServiceKeyring {
  const keyring = new Map<ServiceName, ServiceKey[]>();
  const entries = value
    .split(",")
    .map((entry) => entry.trim())
    .filter((entry) => entry !== "");
  if (entries.length === 0) throw new Error("must list at least one service:kid:secret entry");
  entries.forEach((entry, index) => {
    const [service, kid, ...rest] = entry.split(":");
    const secret = rest.join(":");
    const where = `entry ${index + 1}`;
    if (!isServiceName(service)) throw new Error(`${where}: service must be one of ${SERVICE_NAMES.join(", ")}`);
    if (!kid || !KID_PATTERN.test(kid)) throw new Error(`${where} (${service}): kid must be 1-64 of A-Z a-z 0-9 . _ -`);
    if (secret.length < MIN_SECRET_LENGTH) throw new Error(`${where} (${service}:${kid}): secret must be at least ${MIN_SECRET_LENGTH} characters`);
    const keys = keyring.get(service) ?? [];
    if (keys.some((key) => key.kid === kid)) throw new Error(`${where}: ${service}:${kid} is listed twice`);
    keys.push({ service, kid, secret: new TextEncoder().encode(secret) });
    keyring.set(service, keys);
  });
  return keyring;
}

// Development and tests only: every process derives the same keys from this seed, so `npm start` and test systems
// agree without passing keys around. Production refuses these values (serviceKeyringOf).
const DEV_SEED = "renderbus-development-service-token-seed-not-for-production";
const DEV_KID = "dev";
const devSecretOf = (service: ServiceName) => createHmac("sha256", DEV_SEED).update(service).digest("base64url");

/** The development keys of every service, in SERVICE_TOKEN_KEYS format. */
export function devServiceTokenKeys(): string {
  return SERVICE_NAMES.map((service) => `${service}:${DEV_KID}:${devSecretOf(service)}`).join(",");
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
 * development key, or lacks a key for `service` itself.
 */
export function serviceKeyringOf(service: ServiceName, config: { MODE?: string; SERVICE_TOKEN_KEYS?: string | undefined }): ServiceKeyring {
  const fail = (message: string): never => {
    throw new ConfigError([{ variable: SERVICE_TOKEN_KEYS, message }]);
  };
  const production = config.MODE === "production";
  const configured = config.SERVICE_TOKEN_KEYS?.trim();
  if (!configured) {
    if (production) fail("is required in production (service:kid:secret,... of this service and of its callers)");
    return parseServiceTokenKeys(devServiceTokenKeys());
  }
  let keyring: ServiceKeyring = new Map();
  try {
    keyring = parseServiceTokenKeys(configured);
  } catch (error) {
    fail((error as Error).message);
  }
  if (production) {
    const devSecrets = new Set(SERVICE_NAMES.map(devSecretOf));
    for (const keys of keyring.values()) {
      for (const key of keys) {
        if (devSecrets.has(new TextDecoder().decode(key.secret))) fail(`${key.service}:${key.kid} is a development key; generate real ones for production`);
      }
    }
  }
  if (!keyring.get(service)?.length) fail(`has no key for ${service} itself (the first ${service}:kid:secret entry signs its calls)`);
  return keyring;
}
