import { z } from "zod";
import { ConfigError } from "./config-error.js";

export { ConfigError } from "./config-error.js";

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
export { readRpcTlsFiles, RPC_TRANSPORTS, rpcTransportConfigOf, type RpcTlsFiles, type RpcTlsPaths, type RpcTransportConfig, type RpcTransportMode, type RpcTransportVariables } from "./rpc-transport-config.js";
export { isKnownDevelopmentSecret, requireProductionSecrets, type SecretsOf } from "./production-secrets.js";
