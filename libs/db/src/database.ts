import { Kysely, PostgresDialect, type Transaction } from "kysely";
import pg from "pg";
import { preparingPool } from "./prepared-statements.js";

// int8 (bigint / bigserial) values are positions and epoch-ms timestamps that fit a JS number safely.
pg.types.setTypeParser(20, (value) => Number(value));

/** See DatabaseOptions.idleInTransactionTimeoutMs; DATABASE_IDLE_IN_TRANSACTION_TIMEOUT_MS in the services' config. */
export const DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS = 60_000;

export interface DatabaseOptions {
  url: string;
  /** The service's schema: every query of this pool resolves unqualified names there first. */
  schema: string;
  maxConnections?: number;
  applicationName?: string;
  /**
   * PostgreSQL ends a session that sits idle inside a transaction this long (idle_in_transaction_session_timeout),
   * releasing its row locks: a process frozen mid-transaction (SIGSTOP, a paused VM, a debugger) would otherwise hold
   * the rows it claimed (outbox rows, leased deliveries) from every other replica for as long as it stays frozen.
   */
  idleInTransactionTimeoutMs?: number;
}

export interface Database<DB> {
  db: Kysely<DB>;
  pool: pg.Pool;
  schema: string;
  close(): Promise<void>;
}

/** A Kysely instance over a pg pool whose `search_path` is the service's own schema. */
export function createDatabase<DB>({ url, schema, maxConnections = 10, applicationName, idleInTransactionTimeoutMs = DEFAULT_IDLE_IN_TRANSACTION_TIMEOUT_MS }: DatabaseOptions): Database<DB> {
  assertIdentifier(schema);
  if (!Number.isSafeInteger(idleInTransactionTimeoutMs) || idleInTransactionTimeoutMs < 1) throw new Error(`invalid idle-in-transaction timeout: ${idleInTransactionTimeoutMs}`);
  const pool = new pg.Pool({
    connectionString: url,
    max: maxConnections,
    options: `-c search_path=${schema},public -c idle_in_transaction_session_timeout=${idleInTransactionTimeoutMs}`,
    application_name: applicationName ?? schema,
  });
  // An idle client losing its connection (database restart) must not crash the process; the pool replaces it.
  pool.on("error", () => undefined);
  // Nor may a checked-out one (a transaction awaiting NATS or gRPC between queries): pg emits "error" on the client,
  // which has no listener while checked out. The pending query fails on its own and the pool drops the client.
  pool.on("connect", (client) => client.on("error", () => undefined));
  // Statements built with preparedSql run as named prepared statements (prepared-statements.ts).
  const db = new Kysely<DB>({ dialect: new PostgresDialect({ pool: preparingPool(pool) as never }) });
  return { db, pool, schema, close: () => db.destroy() };
}

export type Executor<DB> = Kysely<DB> | Transaction<DB>;

/** Schema names are interpolated into SQL, so they are restricted to plain identifiers. */
export function assertIdentifier(name: string): void {
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(name)) throw new Error(`invalid SQL identifier: ${name}`);
}

/** Unique-violation check for pg errors (SQLSTATE 23505), optionally on a given constraint. */
export function isUniqueViolation(error: unknown, constraint?: string): boolean {
  const pgError = error as { code?: string; constraint?: string };
  return pgError?.code === "23505" && (constraint === undefined || pgError.constraint === constraint);
}
