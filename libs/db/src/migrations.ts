import { Kysely, Migrator, sql, type Migration } from "kysely";
import { assertIdentifier } from "./database.js";

export type Migrations = Record<string, Migration>;

/**
 * Applies a service's migrations inside its own schema, with the history table in that schema too.
 * Safe with several replicas starting at once: schema creation runs under an advisory lock and Kysely's migrator
 * holds a lock of its own while it migrates.
 */
export async function migrateToLatest(db: Kysely<any>, schema: string, migrations: Migrations): Promise<void> {
  assertIdentifier(schema);
  await db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext(${`migrate:${schema}`}))`.execute(trx);
    await sql`create schema if not exists ${sql.id(schema)}`.execute(trx);
  });
  const migrator = new Migrator({
    db: db.withSchema(schema),
    provider: { getMigrations: async () => migrations },
    migrationTableSchema: schema,
    migrationTableName: "migrations",
    migrationLockTableName: "migrations_lock",
  });
  const { error, results } = await migrator.migrateToLatest();
  if (error) {
    const failed = results?.find((result) => result.status === "Error");
    throw new Error(`migration ${failed?.migrationName ?? "?"} of schema ${schema} failed: ${String((error as Error).message ?? error)}`);
  }
}
