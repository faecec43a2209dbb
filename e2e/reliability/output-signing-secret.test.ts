import { describe, expect, it } from "vitest";
import type { z } from "zod";
import { ConfigError, parseConfig } from "@renderbus/config";
import { gatewayConfigSchema } from "../../services/gateway/src/config.js";
import { workerConfigSchema } from "../../services/worker/src/config.js";

/** The services that sign or verify download links with OUTPUT_SIGNING_SECRET (SECURITY-AUDIT finding 11). */
const SIGNERS: [string, z.ZodObject][] = [
  ["gateway", gatewayConfigSchema],
  ["worker", workerConfigSchema],
];

function problemsOf(schema: z.ZodObject, environment: Record<string, string>): string {
  try {
    parseConfig(schema, environment);
    return "";
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
}

describe.each(SIGNERS)("%s config: OUTPUT_SIGNING_SECRET", (service, schema) => {
  /** Production needs SERVICE_TOKEN_KEYS too (its own check, libs/rpc); these tests are about OUTPUT_SIGNING_SECRET. */
  const production = { MODE: "production", SERVICE_TOKEN_KEYS: `${service}:k1:private:DFtMKpFragqZq4gFa3dFsvjqcm5CBvmh4jkgCipo38E` };

  it("refuses to start in production without it, naming the variable", () => {
    expect(problemsOf(schema, production)).toContain("OUTPUT_SIGNING_SECRET: is a published development value");
  });

  it.each(["dev-output-signing-secret-change-me", "compose-output-signing-secret-change-me", "REPLACE_ME"])(
    "refuses to start in production with the published value %s",
    (value) => {
      expect(problemsOf(schema, { ...production, OUTPUT_SIGNING_SECRET: value })).toContain("OUTPUT_SIGNING_SECRET: is a published development value");
    },
  );

  it("starts in production with a secret of its own", () => {
    expect(problemsOf(schema, { ...production, OUTPUT_SIGNING_SECRET: "a-signing-secret-nobody-else-has" })).not.toContain("OUTPUT_SIGNING_SECRET");
  });

  it("keeps the development default outside production", () => {
    expect((parseConfig(schema, {}) as { OUTPUT_SIGNING_SECRET: string }).OUTPUT_SIGNING_SECRET).toBe("dev-output-signing-secret-change-me");
  });
});
