import { z } from "zod";

/** Thrown when the environment does not satisfy a service's config schema; the message names every bad variable. */
export class ConfigError extends Error {
  override readonly name = "ConfigError";
  constructor(readonly problems: { variable: string; message: string }[]) {
    super(`Invalid configuration: ${problems.map((p) => `${p.variable}: ${p.message}`).join("; ")}`);
  }
}

/**
 * Parses `env` once against a zod object schema whose keys are the environment variable names.
 * Returns the typed config or throws ConfigError naming each missing or malformed variable.
 */
export function parseConfig<S extends z.ZodObject>(schema: S, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  const result = schema.safeParse(env);
  if (result.success) return result.data;
  throw new ConfigError(
    result.error.issues.map((issue) => ({
      variable: issue.path.join(".") || "(environment)",
      message: issue.message,
    })),
  );
}

/** Loads config or exits the process with a clear message: the way every `main.ts` starts. */
export function loadConfigOrExit<S extends z.ZodObject>(schema: S, service: string, env: NodeJS.ProcessEnv = process.env): z.infer<S> {
  try {
    return parseConfig(schema, env);
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${service}: ${error.message}\n`);
      process.exit(78); // EX_CONFIG
    }
    throw error;
  }
}

/** Building blocks shared by service schemas. */
export const env = {
  url: (protocols: string[]) =>
    z.string().refine((value) => {
      try {
        return protocols.includes(new URL(value).protocol.replace(":", ""));
      } catch {
        return false;
      }
    }, `must be a URL (${protocols.join(", ")})`),
  port: (fallback: number) => z.coerce.number().int().min(0).max(65535).default(fallback),
  bool: (fallback: boolean) =>
    z
      .enum(["true", "false", "1", "0"])
      .default(fallback ? "true" : "false")
      .transform((value) => value === "true" || value === "1"),
  /** Comma-separated list of non-negative integers (e.g. a retry schedule in ms). */
  intList: (fallback: string) =>
    z
      .string()
      .default(fallback)
      .refine((value) => /^\d+(,\d+)*$/.test(value.trim()), "must be a comma-separated list of integers")
      .transform((value) => value.split(",").map(Number)),
  mode: () => z.enum(["production", "development", "test"]).default("development"),
  /**
   * ALLOW_PRIVATE_ADDRESSES: the SSRF guards of job inputs and webhooks are on in every mode; only this explicit
   * `true` (a loopback demo, tests with local servers) turns them off.
   */
  allowPrivateAddresses: () => z.enum(["true", "false"]).default("false").transform((value) => value === "true"),
  logLevel: () => z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
};

export { isKnownDevelopmentSecret, requireProductionSecrets, type SecretsOf } from "./production-secrets.js";
