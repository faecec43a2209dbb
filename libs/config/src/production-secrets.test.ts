import { randomBytes } from "node:crypto";
import { z } from "zod";
import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "./index.js";
import { isKnownDevelopmentSecret, requireProductionSecrets } from "./production-secrets.js";

const schema = z
  .object({ MODE: z.string().default("development"), SIGNING_SECRET: z.string().optional(), KEYS: z.string().optional() })
  .superRefine(requireProductionSecrets({ SIGNING_SECRET: true, KEYS: (value: string) => value.split(",") }));

function variablesRefused(environment: Record<string, string>): string[] {
  try {
    parseConfig(schema, environment);
    return [];
  } catch (error) {
    if (error instanceof ConfigError) return error.problems.map((problem) => `${problem.variable}: ${problem.message}`);
    throw error;
  }
}

describe("requireProductionSecrets", () => {
  it("names each secret missing in production", () => {
    expect(variablesRefused({ MODE: "production" })).toEqual(["SIGNING_SECRET: is required in production", "KEYS: is required in production"]);
  });

  it("names a secret that holds a published development value, also inside a list", () => {
    const problems = variablesRefused({ MODE: "production", SIGNING_SECRET: "dev-output-signing-secret-change-me", KEYS: `${randomBytes(32).toString("base64")},REPLACE_ME` });
    expect(problems.map((problem) => problem.split(":")[0])).toEqual(["SIGNING_SECRET", "KEYS"]);
    expect(problems[0]).toContain("published development value");
  });

  it("lets real secrets through in production and anything through outside it", () => {
    expect(variablesRefused({ MODE: "production", SIGNING_SECRET: randomBytes(24).toString("hex"), KEYS: randomBytes(32).toString("base64") })).toEqual([]);
    expect(variablesRefused({ MODE: "development", SIGNING_SECRET: "dev-output-signing-secret-change-me" })).toEqual([]);
  });
});

describe("isKnownDevelopmentSecret", () => {
  it("knows the repository's development keys in any base64 spelling", () => {
    const devKey = Buffer.from("renderbus-dev-secrets-key-32byte");
    expect(isKnownDevelopmentSecret(devKey.toString("base64"))).toBe(true);
    expect(isKnownDevelopmentSecret(devKey.toString("base64url"))).toBe(true);
    expect(isKnownDevelopmentSecret(" renderbus-compose-better-auth-secret-not-for-production ")).toBe(true);
    expect(isKnownDevelopmentSecret(randomBytes(32).toString("base64"))).toBe(false);
  });
});
