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

export { env } from "./env.js";
export { findExecutable, pathDirectories } from "./find-executable.js";
export { commonConfigSchema, databaseVariables, streamVariables } from "./common-config.js";
export { isKnownDevelopmentSecret, requireProductionSecrets, type SecretsOf } from "./production-secrets.js";
