import { z } from "zod";
import { env } from "./env.js";
import { RPC_TRANSPORTS } from "./rpc-transport-config.js";

/**
 * The variables every service reads, each with one default and one check: a service's schema extends this
 * (`commonConfigSchema.extend({ ...databaseVariables, ...streamVariables, ...its own })`), so the block is stated once.
 */
export const commonConfigSchema = z.object({
  /** `production` requires real secrets (and HTTPS webhook URLs); `development` and `test` accept published ones. */
  MODE: env.mode(),
  LOG_LEVEL: env.logLevel(),
  NATS_URL: env.url(["nats", "tls"]).default("nats://127.0.0.1:4222"),
  /** Prefix of subjects and stream names; tests isolate themselves with it. Empty in production. */
  NATS_NAMESPACE: z.string().regex(/^[A-Za-z0-9_-]*$/, "must be letters, digits, _ or -").default(""),
  /**
   * How long a stop on SIGTERM/SIGINT may take before the process exits anyway, non-zero (run-service.ts). Under the
   * 30 s an orchestrator (Kubernetes' terminationGracePeriodSeconds) waits before its SIGKILL, so the log says what
   * hung. Exiting with work unfinished is safe: nothing unfinished was acked, and a crash loses nothing either.
   */
  SHUTDOWN_TIMEOUT_MS: z.coerce.number().int().min(100).max(600_000).default(25_000),
  /** OTLP/HTTP endpoint for traces; nothing is exported when unset. */
  OTEL_EXPORTER_OTLP_ENDPOINT: env.url(["http", "https"]).optional(),
  /**
   * How gRPC calls between services are protected: `tls` (mutual TLS with the three files below), `mesh` (a service
   * mesh encrypts the pods' traffic) or `plaintext`. Unset: plaintext, except in production, where a service refuses
   * to start without `tls` or `mesh`. That rule spans variables, so it is checked when the service builds its
   * identity (`serviceIdentity` in libs/rpc, through rpcTransportConfigOf), not here.
   */
  RPC_TRANSPORT: z.enum(RPC_TRANSPORTS).optional(),
  /** PEM file of the CA that signed the other services' certificates (RPC_TRANSPORT=tls). */
  RPC_TLS_CA: z.string().optional(),
  /** PEM file of this service's certificate (chain), whose SAN names the host in the callers' `*_GRPC_ADDRESS`. */
  RPC_TLS_CERT: z.string().optional(),
  /** PEM file of the certificate's private key, unencrypted. */
  RPC_TLS_KEY: z.string().optional(),
});

/** Services with their own PostgreSQL schema (auth, jobs, webhook-dispatcher). */
export const databaseVariables = {
  DATABASE_URL: env.url(["postgres", "postgresql"]).default("postgres://postgres@127.0.0.1:5432/postgres"),
  /**
   * PostgreSQL ends a session idle inside a transaction this long, releasing its locks: a replica frozen mid-transaction
   * (SIGSTOP, a paused VM) must not hold the rows it claimed from the others. Far above any wait inside a
   * transaction (a PubAck, a gRPC deadline).
   */
  DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS: z.coerce.number().int().min(1000).max(3_600_000).default(60_000),
};

/** Services that declare JetStream streams. */
export const streamVariables = {
  /** Stream replicas of the streams this service declares (3 on a JetStream cluster). */
  NATS_REPLICAS: z.coerce.number().int().min(1).max(5).default(1),
};
