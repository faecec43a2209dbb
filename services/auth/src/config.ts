import { z } from "zod";
import { commonConfigSchema, databaseVariables, env, requireProductionSecrets, streamVariables } from "@renderbus/config";
import { serviceTokenKeysVariable } from "@renderbus/rpc";
import { loadPlans } from "@renderbus/plans";
import { secretsEncryptionVariables, secretsKeyringOf, secretsKeyringProductionCheck, type SecretKeyring } from "@renderbus/secret-box";

/** Fixed keys for development and tests only; production refuses to start without real ones (checked below). */
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
    ...secretsEncryptionVariables,
    /** Signs Better Auth session cookies (at least 32 characters). Required in production. */
    BETTER_AUTH_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
    /**
     * `required` (the default, every mode): a sign-up is sent a link to confirm its address, and the free plan's
     * credits of the orgs a user creates (their personal org included) are held until they confirm it
     * (billing/held-credits.ts). `off`: every sign-up's orgs get their credits at once (a closed deployment, or one
     * that accepts the abuse: SECURITY-AUDIT finding 3).
     */
    EMAIL_VERIFICATION: z.enum(["required", "off"]).default("required"),
    /**
     * How verification emails leave: `smtp://user:password@host:587` (STARTTLS when the server offers it) or
     * `smtps://...:465`. Required when EMAIL_VERIFICATION=required. A secret: never logged.
     */
    SMTP_URL: z.preprocess((value) => (value === "" ? undefined : value), env.url(["smtp", "smtps"]).optional()),
    /**
     * How many of one org's endpoint disables are emailed to its owners and admins in any hour (alerts/alert-limit.ts):
     * a member can disable an endpoint at will (a receiver answering 410), and each disable mails every admin.
     */
    ENDPOINT_ALERTS_PER_ORG_PER_HOUR: z.coerce.number().int().min(1).max(1000).default(5),
    /** The From of the emails sent; default `Renderbus <no-reply@PUBLIC_URL's host>`. */
    EMAIL_FROM: z.string().min(3).max(200).optional(),
    /** How often orgs whose credit month has turned get their monthly credits (see billing/monthly-credits.ts). */
    CREDITS_RENEWAL_INTERVAL_MS: z.coerce.number().int().positive().default(300_000),
    /** How often expired rows are pruned (src/retention/prune.ts). */
    RETENTION_SWEEP_INTERVAL_MS: z.coerce.number().int().positive().default(60 * 60 * 1000),
    /**
     * How long a settled job's marker is kept (it makes settlement idempotent). It must outlast JOBS_EVENTS' max age
     * (7 days), the longest a job event could be delivered again, hence at least 8.
     */
    SETTLED_JOB_RETENTION_DAYS: z.coerce.number().min(8).default(30),
    /** Keys of internal call tokens: this service's Ed25519 private key and its callers' public keys (libs/rpc service-keys.ts, `npm run service-keys`); required in production. */
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
    requireProductionSecrets({ BETTER_AUTH_SECRET: true, ...secretsKeyringProductionCheck(config) })(config, context);
    if (config.EMAIL_VERIFICATION === "required" && !config.SMTP_URL) {
      context.addIssue({
        code: "custom",
        path: ["SMTP_URL"],
        message: "is required while EMAIL_VERIFICATION=required (sign-ups are sent a confirmation link); set EMAIL_VERIFICATION=off to give every sign-up its free credits without one",
      });
    }
  });

export type AuthConfig = z.infer<typeof authConfigSchema>;

/** The keyring of webhook secrets at rest (libs/secret-box secretsKeyringOf). */
export function secretsKeyOf(config: AuthConfig): SecretKeyring {
  return secretsKeyringOf(config);
}

/** The From of Renderbus's emails: EMAIL_FROM, or no-reply at the public URL's host. */
export function emailFromOf(config: Pick<AuthConfig, "EMAIL_FROM" | "PUBLIC_URL">): string {
  return config.EMAIL_FROM ?? `Renderbus <no-reply@${new URL(config.PUBLIC_URL).hostname}>`;
}

/** Better Auth's signing secret: the configured one, or a fixed development value outside production. */
export function betterAuthSecretOf(config: AuthConfig): string {
  return config.BETTER_AUTH_SECRET ?? DEV_BETTER_AUTH_SECRET;
}
