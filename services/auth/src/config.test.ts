import { spawnSync } from "node:child_process";
import { fileURLToPath } from "node:url";
import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "@renderbus/config";
import { authConfigSchema, secretsKeyOf } from "./config.js";

function problemsOf(env: Record<string, string>): string {
  try {
    parseConfig(authConfigSchema, env);
    return "";
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
}

describe("auth config", () => {
  it("starts with defaults in development, including a fixed 32-byte secrets key", () => {
    const config = parseConfig(authConfigSchema, {});
    expect(config).toMatchObject({ MODE: "development", AUTH_GRPC_PORT: 50051, AUTH_HTTP_PORT: 50061, PUBLIC_URL: "http://127.0.0.1:3000" });
    expect(secretsKeyOf(config)).toHaveLength(32);
  });

  it("names each malformed variable", () => {
    expect(problemsOf({ AUTH_HTTP_PORT: "http" })).toContain("AUTH_HTTP_PORT");
    expect(problemsOf({ DATABASE_URL: "mysql://x" })).toContain("DATABASE_URL");
    expect(problemsOf({ PUBLIC_URL: "not a url" })).toContain("PUBLIC_URL");
    expect(problemsOf({ SECRETS_ENCRYPTION_KEY: "c2hvcnQ=" })).toContain("SECRETS_ENCRYPTION_KEY: must be 32 bytes");
    expect(problemsOf({ PLANS_JSON: '{"gold":{}}' })).toContain("PLANS_JSON");
  });

  it("requires real secrets in production", () => {
    const message = problemsOf({ MODE: "production" });
    expect(message).toContain("SECRETS_ENCRYPTION_KEY: is required in production");
    expect(message).toContain("BETTER_AUTH_SECRET: is required in production");
  });

  it("stops the service with exit code 78 and a message naming the malformed variable", () => {
    const main = fileURLToPath(new URL("./main.ts", import.meta.url));
    const result = spawnSync("npx", ["tsx", main], { env: { ...process.env, AUTH_HTTP_PORT: "http" }, encoding: "utf8", timeout: 30_000 });
    expect(result.status).toBe(78);
    expect(result.stderr).toContain("auth: Invalid configuration: AUTH_HTTP_PORT");
  });
});
