import { z } from "zod";
import { describe, expect, it } from "vitest";
import { commonConfigSchema, ConfigError, databaseVariables, parseConfig, streamVariables } from "./index.js";

/** A service schema the way every service builds its own. */
const serviceSchema = commonConfigSchema.extend({ ...databaseVariables, ...streamVariables, SERVICE_PORT: z.coerce.number().default(1) });

function problemsOf(environment: NodeJS.ProcessEnv): ConfigError["problems"] {
  try {
    parseConfig(serviceSchema, environment);
  } catch (error) {
    if (error instanceof ConfigError) return error.problems;
    throw error;
  }
  throw new Error("expected a ConfigError");
}

describe("the common configuration block", () => {
  it("gives every service the same defaults for the shared variables, beside the service's own", () => {
    expect(parseConfig(serviceSchema, {})).toEqual({
      MODE: "development",
      LOG_LEVEL: "info",
      NATS_URL: "nats://127.0.0.1:4222",
      NATS_NAMESPACE: "",
      DATABASE_URL: "postgres://postgres@127.0.0.1:5432/postgres",
      DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: 60_000,
      NATS_REPLICAS: 1,
      SHUTDOWN_TIMEOUT_MS: 25_000,
      SERVICE_PORT: 1,
    });
  });

  it("reads set values", () => {
    const config = parseConfig(serviceSchema, {
      MODE: "production",
      LOG_LEVEL: "warn",
      NATS_URL: "tls://nats.internal:4222",
      NATS_NAMESPACE: "t_ab-12",
      OTEL_EXPORTER_OTLP_ENDPOINT: "http://otel-collector:4318",
      DATABASE_URL: "postgresql://app@db:5432/renderbus",
      DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: "120000",
      NATS_REPLICAS: "3",
      RPC_TRANSPORT: "tls",
      RPC_TLS_CA: "/etc/renderbus/rpc/ca.crt",
      RPC_TLS_CERT: "/etc/renderbus/rpc/tls.crt",
      RPC_TLS_KEY: "/etc/renderbus/rpc/tls.key",
    });
    expect(config).toMatchObject({ DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: 120_000 });
    expect(config).toMatchObject({ RPC_TRANSPORT: "tls", RPC_TLS_CA: "/etc/renderbus/rpc/ca.crt", RPC_TLS_CERT: "/etc/renderbus/rpc/tls.crt", RPC_TLS_KEY: "/etc/renderbus/rpc/tls.key" });
    expect(config).toMatchObject({ MODE: "production", LOG_LEVEL: "warn", NATS_URL: "tls://nats.internal:4222", NATS_NAMESPACE: "t_ab-12", OTEL_EXPORTER_OTLP_ENDPOINT: "http://otel-collector:4318", DATABASE_URL: "postgresql://app@db:5432/renderbus", NATS_REPLICAS: 3 });
  });

  it("names each malformed shared variable", () => {
    const problems = problemsOf({
      MODE: "staging",
      LOG_LEVEL: "loud",
      NATS_URL: "http://nats:4222",
      NATS_NAMESPACE: "a.b",
      OTEL_EXPORTER_OTLP_ENDPOINT: "otel-collector:4318",
      DATABASE_URL: "mysql://db/x",
      DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: "0",
      NATS_REPLICAS: "7",
      SHUTDOWN_TIMEOUT_MS: "10",
      RPC_TRANSPORT: "ssl",
    });
    expect(problems.map((problem) => problem.variable).sort()).toEqual(
      ["DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS", "DATABASE_URL", "LOG_LEVEL", "MODE", "NATS_NAMESPACE", "NATS_REPLICAS", "NATS_URL", "OTEL_EXPORTER_OTLP_ENDPOINT", "RPC_TRANSPORT", "SHUTDOWN_TIMEOUT_MS"].sort(),
    );
    expect(problems.find((problem) => problem.variable === "NATS_NAMESPACE")?.message).toBe("must be letters, digits, _ or -");
  });

  it("leaves out the database and stream variables of a service that does not add them", () => {
    expect(Object.keys(parseConfig(commonConfigSchema, {})).sort()).toEqual(["LOG_LEVEL", "MODE", "NATS_NAMESPACE", "NATS_URL", "SHUTDOWN_TIMEOUT_MS"]);
  });
});
