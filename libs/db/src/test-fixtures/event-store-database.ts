import { createTestDatabase } from "@renderbus/testing";
import { createDatabase, type Database } from "../database.js";
import { createEventStoreTables, type EventStoreTables } from "../event-store-schema.js";
import { migrateToLatest } from "../migrations.js";

/**
 * A fresh test database with the event store and outbox tables in `schema`, created the way services do it
 * (a migration run by `migrateToLatest`).
 */
export async function createEventStoreDatabase(label: string, schema: string, maxConnections = 20): Promise<Database<EventStoreTables> & { url: string }> {
  const url = await createTestDatabase(label);
  const database = createDatabase<EventStoreTables>({ url, schema, maxConnections });
  await migrateToLatest(database.db, schema, {
    "2026-01-01-001-event-store": { up: (db) => createEventStoreTables(db, schema) },
  });
  return { ...database, url };
}
