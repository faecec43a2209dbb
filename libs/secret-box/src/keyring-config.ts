import { z } from "zod";
import { parseSecretKeyring, SINGLE_KEY_KID, type SecretKeyring } from "./secret-box.js";

/** Fixed key for development and tests only; production refuses to start without a real one (secretsKeyringProductionCheck). */
const DEV_SECRETS_ENCRYPTION_KEY = Buffer.from("renderbus-dev-secrets-key-32byte").toString("base64");

/**
 * The variables of the keyring that seals webhook secrets at rest, for every service that stores some (auth: the
 * org's webhook secret; the webhook dispatcher: its endpoints' secrets). Both read the same keys.
 */
export const secretsEncryptionVariables = {
  /**
   * Keys of webhook secrets at rest (AES-256-GCM), `kid:base64key,...` newest first: the first encrypts, all decrypt.
   * Rotation: put a new key first, run `npm run admin -- secrets:reencrypt`, then drop the old one (docs/operations.md).
   */
  SECRETS_ENCRYPTION_KEYS: z
    .string()
    .optional()
    .superRefine((value, context) => {
      if (value === undefined) return;
      try {
        parseSecretKeyring(value);
      } catch (error) {
        context.addIssue({ code: "custom", message: (error as Error).message });
      }
    }),
  /**
   * Whether values sealed in the first format (`v1`: no kid, not bound to an org) still open. `true` by default for
   * deployments that stored some; once `npm run admin -- secrets:reencrypt` has rewritten them, `false` refuses any
   * that appears later (one a database writer moved between orgs would otherwise open there).
   */
  SECRETS_ACCEPT_V1: z.enum(["true", "false"]).default("true").transform((value) => value === "true"),
  /** The single-key form (kid `default`), kept for existing deployments; SECRETS_ENCRYPTION_KEYS is read first. */
  SECRETS_ENCRYPTION_KEY: z
    .string()
    .refine((value) => Buffer.from(value, "base64").length === 32, "must be 32 bytes encoded as base64")
    .optional(),
};

/** What a service config holds of the keyring variables. */
export interface SecretsEncryptionConfig {
  SECRETS_ENCRYPTION_KEYS?: string | undefined;
  SECRETS_ENCRYPTION_KEY?: string | undefined;
}

/** The base64 keys of a SECRETS_ENCRYPTION_KEYS value (none when malformed: its own check reports that). */
function keysOf(value: string): string[] {
  try {
    return parseSecretKeyring(value).map(({ key }) => key.toString("base64"));
  } catch {
    return [];
  }
}

/**
 * The variables `requireProductionSecrets` (libs/config) must check: one of the two key variables is required, and
 * whichever is set must hold no published key.
 */
export function secretsKeyringProductionCheck(config: SecretsEncryptionConfig): Record<string, ((value: string) => string[]) | true> {
  return {
    ...(config.SECRETS_ENCRYPTION_KEYS !== undefined || config.SECRETS_ENCRYPTION_KEY === undefined ? { SECRETS_ENCRYPTION_KEYS: keysOf } : {}),
    ...(config.SECRETS_ENCRYPTION_KEY !== undefined ? { SECRETS_ENCRYPTION_KEY: true as const } : {}),
  };
}

/**
 * The keyring of webhook secrets at rest, newest first: SECRETS_ENCRYPTION_KEYS, then SECRETS_ENCRYPTION_KEY as kid
 * `default` (unless a key of that kid is listed), or the fixed development key outside production.
 */
export function secretsKeyringOf(config: SecretsEncryptionConfig): SecretKeyring {
  const listed = config.SECRETS_ENCRYPTION_KEYS === undefined ? [] : parseSecretKeyring(config.SECRETS_ENCRYPTION_KEYS);
  const single = config.SECRETS_ENCRYPTION_KEY ?? (listed.length === 0 ? DEV_SECRETS_ENCRYPTION_KEY : undefined);
  if (single === undefined || listed.some((entry) => entry.kid === SINGLE_KEY_KID)) return listed;
  return [...listed, { kid: SINGLE_KEY_KID, key: Buffer.from(single, "base64") }];
}
