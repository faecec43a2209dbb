import { describe, expect, it } from "vitest";
import { ConfigError, parseConfig } from "@renderbus/config";
import { workerConfigSchema } from "./config.js";

function problemsOf(environment: Record<string, string>): string {
  try {
    parseConfig(workerConfigSchema, environment);
    return "";
  } catch (error) {
    if (error instanceof ConfigError) return error.message;
    throw error;
  }
}

/** Production needs SERVICE_TOKEN_KEYS too (its own check, libs/rpc); these tests are about OUTPUT_SIGNING_SECRET. */
const production = { MODE: "production", SERVICE_TOKEN_KEYS: "worker:k1:vGz8aIYrGnUBBXQZDsFbpNpg7dqsyX9rYa0XUNij2g" };

describe("worker config: OUTPUT_SIGNING_SECRET", () => {
  it("refuses to start in production without it, naming the variable", () => {
    expect(problemsOf(production)).toContain("OUTPUT_SIGNING_SECRET: is a published development value");
  });

  it.each(["dev-output-signing-secret-change-me", "compose-output-signing-secret-change-me", "REPLACE_ME"])(
    "refuses to start in production with the published value %s",
    (value) => {
      expect(problemsOf({ ...production, OUTPUT_SIGNING_SECRET: value })).toContain("OUTPUT_SIGNING_SECRET: is a published development value");
    },
  );

  it("starts in production with a secret of its own", () => {
    expect(problemsOf({ ...production, OUTPUT_SIGNING_SECRET: "a-signing-secret-nobody-else-has" })).not.toContain("OUTPUT_SIGNING_SECRET");
  });

  it("keeps the development default outside production", () => {
    expect(parseConfig(workerConfigSchema, {}).OUTPUT_SIGNING_SECRET).toBe("dev-output-signing-secret-change-me");
  });
});
