import type { z } from "zod";

/**
 * Secret values that are written down in this repository (schema defaults, docker-compose.yml, deploy/k8s
 * placeholders): public, so production refuses them as if they were unset. Base64 keys are compared by their bytes.
 */
const KNOWN_DEVELOPMENT_SECRETS: readonly string[] = [
  // OUTPUT_SIGNING_SECRET: gateway and worker defaults, compose's former default.
  "dev-output-signing-secret-change-me",
  "compose-output-signing-secret-change-me",
  // BETTER_AUTH_SECRET: the auth service's development value, compose's former default.
  "renderbus-development-better-auth-secret-not-for-production",
  "renderbus-compose-better-auth-secret-not-for-production",
  // SECRETS_ENCRYPTION_KEY(S): the auth service's development key, compose's former default (base64 of these).
  Buffer.from("renderbus-dev-secrets-key-32byte").toString("base64"),
  Buffer.from("renderbus-compose-secrets-key-32").toString("base64"),
  // deploy/k8s/config.yaml's placeholder.
  "REPLACE_ME",
];

const asBytes = (value: string): Buffer | undefined => (/^[A-Za-z0-9+/_-]+={0,2}$/.test(value) ? Buffer.from(value, "base64") : undefined);
const knownKeyBytes = KNOWN_DEVELOPMENT_SECRETS.map(asBytes).filter((bytes): bytes is Buffer => bytes !== undefined && bytes.length === 32);

/** Whether `value` is one of the secrets published in this repository (or the same bytes in another base64 form). */
export function isKnownDevelopmentSecret(value: string): boolean {
  const trimmed = value.trim();
  if (KNOWN_DEVELOPMENT_SECRETS.includes(trimmed)) return true;
  const bytes = asBytes(trimmed);
  return bytes !== undefined && bytes.length === 32 && knownKeyBytes.some((known) => known.equals(bytes));
}

/** How a variable's secrets are read out of its value (a keyring lists several); the whole value by default. */
export type SecretsOf = (value: string) => string[];

/**
 * A `superRefine` for a service schema: in MODE=production each named variable must be set and none of its secrets
 * may be a {@link isKnownDevelopmentSecret known development value}; the issue names the variable, so the service
 * refuses to start saying which one. Variables with a development default count as unset when they hold it.
 *
 * @param variables variable name => how to read its secrets (e.g. the keys of `kid:key,...`), or `true` for the
 *   whole value
 */
export function requireProductionSecrets<T extends { MODE: string }>(variables: Record<string, SecretsOf | true>) {
  return (config: T, context: z.core.$RefinementCtx<T>): void => {
    if (config.MODE !== "production") return;
    for (const [variable, secretsOf] of Object.entries(variables)) {
      const value = (config as Record<string, unknown>)[variable];
      if (typeof value !== "string" || value.trim() === "") {
        context.addIssue({ code: "custom", path: [variable], message: "is required in production" });
        continue;
      }
      const secrets = secretsOf === true ? [value] : secretsOf(value);
      if (secrets.some(isKnownDevelopmentSecret)) {
        context.addIssue({ code: "custom", path: [variable], message: "is a published development value (or unset): production needs a secret of its own" });
      }
    }
  };
}
