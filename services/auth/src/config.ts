import { z } from "zod";
import { commonConfigSchema, databaseVariables, env, requireProductionSecrets, streamVariables } from "@renderbus/config";
import { serviceTokenKeysVariable } from "@renderbus/rpc";
import { loadPlans } from "@renderbus/plans";
import { parseSecretKeyring, SINGLE_KEY_KID, type SecretKeyring } from "./crypto/secret-box.js";

/** Fixed keys for development and tests only; production refuses to start without real ones (checked below). */
const DEV_SECRETS_ENCRYPTION_KEY = Buffer.from("renderbus-dev-secrets-key-32byte").toString("base64");
const DEV_BETTER_AUTH_SECRET = "renderbus-development-better-auth-secret-not-for-production";

/** The auth service's environment. Keys are the variable names, so a bad value is reported by its name. */
export const authConfigSchema = commonConfigSchema
  .extend({
    ...databaseVariables,
    ...streamVariables,
    /** gRPC port of the Auth and Billing services (0 picks a free one). */
    AUTH_GRPC_PORT: env.port(50051),
    /** HTTP port of Better Auth's `/auth/*` routes; the gateway proxies `/auth/*` here. */
    AUTH_HTTP_PORT: env.port(50061),
    /** Interface the gRPC and HTTP servers bind to (0.0.0.0 inside containers). */
    AUTH_BIND_HOST: z.string().min(1).default("127.0.0.1"),
    /** Base URL users reach the gateway at: Better Auth's base URL, trusted origin, and whether cookies are Secure. */
    PUBLIC_URL: env.url(["http", "https"]).default("http://127.0.0.1:3000"),
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
    /** The single-key form (kid `default`), kept for existing deployments; SECRETS_ENCRYPTION_KEYS is read first. */
    SECRETS_ENCRYPTION_KEY: z
      .string()
      .refine((value) => Buffer.from(value, "base64").length === 32, "must be 32 bytes encoded as base64")
      .optional(),
    /** Signs Better Auth session cookies (at least 32 characters). Required in production. */
    BETTER_AUTH_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
    /** How often orgs whose credit month has turned get their monthly credits (see billing/monthly-credits.ts). */
    CREDITS_RENEWAL_INTERVAL_MS: z.coerce.number().int().positive().default(300_000),
    /** How often expired rows are pruned (src/retention/prune.ts). */
    RETENTION_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(60 * 60 * 1000),
    /**
     * How long a settled job's marker is kept (it makes settlement idempotent). It must outlast JOBS_EVENTS' max age
     * (7 days), the longest a job event could be delivered again, hence at least 8.
     */
    SETTLED_JOB_RETENTION_DAYS: z.coerce.number().min(8).default(30),
    /** Keys of internal call tokens, `service:kid:secret,...` (libs/rpc service-keys.ts); required in production. */
    SERVICE_TOKEN_KEYS: serviceTokenKeysVariable(),
    /** Overrides of the plan table, e.g. `{"free":{"monthlyCredits":500}}`. */
    PLANS_JSON: z
      .string()
      .optional()
      .refine((value) => {
        try {
          loadPlans(value);
          return true;
        } catch {
          return false;
        }
      }, "must be JSON overriding known plans and fields"),
  })
  // Production refuses to start without real secrets, or with one published in this repository (libs/config).
  .superRefine((config, context) => {
    // One of the two key variables is required; whichever is set must hold no published key.
    const keys = {
      ...(config.SECRETS_ENCRYPTION_KEYS !== undefined || config.SECRETS_ENCRYPTION_KEY === undefined ? { SECRETS_ENCRYPTION_KEYS: keysOf } : {}),
      ...(config.SECRETS_ENCRYPTION_KEY !== undefined ? { SECRETS_ENCRYPTION_KEY: true as const } : {}),
    };
    requireProductionSecrets({ BETTER_AUTH_SECRET: true, ...keys })(config, context);
  });

/** The base64 keys of a SECRETS_ENCRYPTION_KEYS value (none when malformed: its own check reports that). */
function keysOf(value: string): string[] {
  try {
    return parseSecretKeyring(value).map(({ key }) => key.toString("base64"));
  } catch {
    return [];
  }
}

export type AuthConfig = z.infer<typeof authConfigSchema>;

/**
 * The keyring of webhook secrets at rest, newest first: SECRETS_ENCRYPTION_KEYS, then SECRETS_ENCRYPTION_KEY as kid
 * `default` (unless a key of that kid is listed), or the fixed development key outside production.
 */
export function secretsKeyOf(config: AuthConfig): SecretKeyring {
  const listed = config.SECRETS_ENCRYPTION_KEYS === undefined ? [] : parseSecretKeyring(config.SECRETS_ENCRYPTION_KEYS);
  const single = config.SECRETS_ENCRYPTION_KEY ?? (listed.length === 0 ? DEV_SECRETS_ENCRYPTION_KEY : undefined);
  if (single === undefined || listed.some((entry) => entry.kid === SINGLE_KEY_KID)) return listed;
  return [...listed, { kid: SINGLE_KEY_KID, key: Buffer.from(single, "base64") }];
}

/** Better Auth's signing secret: the configured one, or a fixed development value outside production. */
export function betterAuthSecretOf(config: AuthConfig): string {
  return config.BETTER_AUTH_SECRET ?? DEV_BETTER_AUTH_SECRET;
}
