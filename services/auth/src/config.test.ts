import { spawnSync } from "node:child_process";
import { randomBytes } from "node:crypto";
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
  it("starts with defaults in development, including a fixed 32-byte secrets key, once told how email leaves", () => {
    const config = parseConfig(authConfigSchema, { SMTP_URL: "smtp://127.0.0.1:2525" });
    expect(config).toMatchObject({ EMAIL_VERIFICATION: "required", SMTP_URL: "smtp://127.0.0.1:2525" });
    expect(config).toMatchObject({ MODE: "development", AUTH_GRPC_PORT: 50051, AUTH_HTTP_PORT: 50061, PUBLIC_URL: "http://127.0.0.1:3000" });
    expect(secretsKeyOf(config).map(({ kid, key }) => [kid, key.length])).toEqual([["default", 32]]);
  });

  it("requires SMTP_URL while sign-ups must confirm their address (the default in every mode), or EMAIL_VERIFICATION=off", () => {
    for (const MODE of ["development", "test", "production"]) {
      expect(problemsOf({ MODE })).toContain("SMTP_URL: is required while EMAIL_VERIFICATION=required");
      expect(problemsOf({ MODE, EMAIL_VERIFICATION: "off" })).not.toContain("SMTP_URL");
    }
    expect(problemsOf({ SMTP_URL: "https://mail.example.com" })).toContain("SMTP_URL: must be a URL (smtp, smtps)");
    expect(problemsOf({ EMAIL_VERIFICATION: "optional" })).toContain("EMAIL_VERIFICATION");
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
    expect(message).toContain("SECRETS_ENCRYPTION_KEYS: is required in production");
    expect(message).toContain("BETTER_AUTH_SECRET: is required in production");
  });

  const realSecrets = { BETTER_AUTH_SECRET: randomBytes(32).toString("hex"), SECRETS_ENCRYPTION_KEYS: `k1:${randomBytes(32).toString("base64")}`, SMTP_URL: "smtps://renderbus:pw@mail.example.com" };

  it("starts in production with secrets of its own, in either key form", () => {
    expect(problemsOf({ MODE: "production", ...realSecrets })).toBe("");
    expect(problemsOf({ MODE: "production", BETTER_AUTH_SECRET: realSecrets.BETTER_AUTH_SECRET, SECRETS_ENCRYPTION_KEY: randomBytes(32).toString("base64"), EMAIL_VERIFICATION: "off" })).toBe("");
  });

  it.each([
    ["BETTER_AUTH_SECRET", { BETTER_AUTH_SECRET: "renderbus-development-better-auth-secret-not-for-production" }],
    ["BETTER_AUTH_SECRET", { BETTER_AUTH_SECRET: "renderbus-compose-better-auth-secret-not-for-production" }],
    ["SECRETS_ENCRYPTION_KEYS", { SECRETS_ENCRYPTION_KEYS: `new:${randomBytes(32).toString("base64")},old:${Buffer.from("renderbus-dev-secrets-key-32byte").toString("base64")}` }],
    ["SECRETS_ENCRYPTION_KEY", { SECRETS_ENCRYPTION_KEYS: undefined, SECRETS_ENCRYPTION_KEY: "cmVuZGVyYnVzLWNvbXBvc2Utc2VjcmV0cy1rZXktMzI=" }],
    ["SECRETS_ENCRYPTION_KEY", { SECRETS_ENCRYPTION_KEY: Buffer.from("renderbus-dev-secrets-key-32byte").toString("base64") }],
  ])("refuses to start in production with a published development value of %s", (variable, values) => {
    const environment = Object.fromEntries(Object.entries({ MODE: "production", ...realSecrets, ...values }).filter(([, value]) => value !== undefined)) as Record<string, string>;
    expect(problemsOf(environment)).toContain(`${variable}: is a published development value`);
  });

  it("accepts the development values outside production", () => {
    expect(problemsOf({ MODE: "development", EMAIL_VERIFICATION: "off", BETTER_AUTH_SECRET: "renderbus-development-better-auth-secret-not-for-production" })).toBe("");
  });

  it("reads a keyring newest first, with the single-key form as kid default", () => {
    const newest = randomBytes(32);
    const single = randomBytes(32);
    const config = parseConfig(authConfigSchema, { EMAIL_VERIFICATION: "off", SECRETS_ENCRYPTION_KEYS: `2026-11:${newest.toString("base64")}`, SECRETS_ENCRYPTION_KEY: single.toString("base64") });
    expect(secretsKeyOf(config)).toEqual([{ kid: "2026-11", key: newest }, { kid: "default", key: single }]);
    expect(problemsOf({ SECRETS_ENCRYPTION_KEYS: "k1:c2hvcnQ=" })).toContain("SECRETS_ENCRYPTION_KEYS: key k1 must be 32 bytes");
  });

  it("stops the service with exit code 78 and a message naming the malformed variable", () => {
    const main = fileURLToPath(new URL("./main.ts", import.meta.url));
    const result = spawnSync("npx", ["tsx", main], { env: { ...process.env, AUTH_HTTP_PORT: "http" }, encoding: "utf8", timeout: 30_000 });
    expect(result.status).toBe(78);
    expect(result.stderr).toContain("auth: Invalid configuration: AUTH_HTTP_PORT");
  });
});
