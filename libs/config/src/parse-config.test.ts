import { spawnSync } from "node:child_process";
import { resolve } from "node:path";
import { z } from "zod";
import { describe, expect, it } from "vitest";
import { ConfigError, env, parseConfig } from "./index.js";

const schema = z.object({
  DATABASE_URL: env.url(["postgres", "postgresql"]),
  GATEWAY_PORT: env.port(3000),
  MODE: env.mode(),
  WEBHOOK_ALLOW_PRIVATE_ADDRESSES: env.bool(false),
  WEBHOOK_RETRY_SCHEDULE_MS: env.intList("5000,25000"),
  LOG_LEVEL: env.logLevel(),
});

function configErrorOf(environment: NodeJS.ProcessEnv): ConfigError {
  try {
    parseConfig(schema, environment);
  } catch (error) {
    if (error instanceof ConfigError) return error;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("parseConfig", () => {
  it("returns typed values with defaults applied", () => {
    const config = parseConfig(schema, { DATABASE_URL: "postgres://db/x", GATEWAY_PORT: "8080", WEBHOOK_ALLOW_PRIVATE_ADDRESSES: "1" });
    expect(config).toEqual({
      DATABASE_URL: "postgres://db/x",
      GATEWAY_PORT: 8080,
      MODE: "development",
      WEBHOOK_ALLOW_PRIVATE_ADDRESSES: true,
      WEBHOOK_RETRY_SCHEDULE_MS: [5000, 25000],
      LOG_LEVEL: "info",
    });
  });

  it("throws ConfigError naming a missing variable", () => {
    const error = configErrorOf({});
    expect(error.problems.map((problem) => problem.variable)).toEqual(["DATABASE_URL"]);
    expect(error.message).toContain("DATABASE_URL");
  });

  it.each([
    ["DATABASE_URL", "mysql://db/x"],
    ["DATABASE_URL", "not a url"],
    ["GATEWAY_PORT", "70000"],
    ["GATEWAY_PORT", "http"],
    ["MODE", "staging"],
    ["WEBHOOK_ALLOW_PRIVATE_ADDRESSES", "yes"],
    ["WEBHOOK_RETRY_SCHEDULE_MS", "5s,10s"],
    ["LOG_LEVEL", "loud"],
  ])("throws ConfigError naming %s when it is malformed (%s)", (variable, value) => {
    const error = configErrorOf({ DATABASE_URL: "postgres://db/x", [variable]: value });
    expect(error.problems.map((problem) => problem.variable)).toEqual([variable]);
    expect(error.message).toContain(variable);
  });

  it("names every bad variable at once", () => {
    const error = configErrorOf({ GATEWAY_PORT: "-1", MODE: "staging" });
    expect(error.problems.map((problem) => problem.variable).sort()).toEqual(["DATABASE_URL", "GATEWAY_PORT", "MODE"]);
  });
});

describe("loadConfigOrExit", () => {
  const fixture = resolve(import.meta.dirname, "test-fixtures/load-config-or-exit.ts");
  const run = (environment: Record<string, string>) =>
    spawnSync(process.execPath, ["--import", "tsx", fixture], {
      cwd: resolve(import.meta.dirname, "../../.."),
      env: { PATH: process.env.PATH ?? "", ...environment },
      encoding: "utf8",
      timeout: 30_000,
    });

  it("exits non-zero with the missing variable's name on stderr", () => {
    const result = run({});
    expect(result.status).not.toBe(0);
    expect(result.status).toBe(78);
    expect(result.stderr).toContain("fixture:");
    expect(result.stderr).toContain("DATABASE_URL");
    expect(result.stdout).not.toContain("started");
  });

  it("exits non-zero naming a malformed variable", () => {
    const result = run({ DATABASE_URL: "postgres://db/x", FIXTURE_PORT: "not-a-port" });
    expect(result.status).toBe(78);
    expect(result.stderr).toContain("FIXTURE_PORT");
  });

  it("starts when the environment is valid", () => {
    const result = run({ DATABASE_URL: "postgres://db/x", FIXTURE_PORT: "4000" });
    expect(result.status).toBe(0);
    expect(result.stdout).toContain("started on 4000");
  });
});
