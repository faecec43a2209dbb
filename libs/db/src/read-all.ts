import { sql, type Kysely } from "kysely";
import type { EventStoreTables } from "./event-store-schema.js";
import { toStoredEvent } from "./read-stream.js";
import type { StoredEvent } from "./append-to-stream.js";

/**
 * Events after a global position, in position order, never skipping one: positions come from a sequence and are
 * taken before commit, so a transaction still in flight can later commit a *lower* position than one already
 * visible. Only events whose writing transaction is older than every transaction still running are returned
 * (`transaction_id < pg_snapshot_xmin(pg_current_snapshot())`); a reader that remembers its last position
 * therefore never jumps over an event that becomes visible later.
 */
export async function readAll<DB extends EventStoreTables>(
  db: Kysely<DB>,
  { after = 0, limit = 1000 }: { after?: number; limit?: number } = {},
): Promise<StoredEvent[]> {
  const rows = await (db as unknown as Kysely<EventStoreTables>)
    .selectFrom("events")
    .select(["global_position", "event_id", "stream_id", "version", "type", "data", "metadata", "created_at"])
    .where("global_position", ">", after)
    .where(sql<boolean>`transaction_id < pg_snapshot_xmin(pg_current_snapshot())`)
    .orderBy("global_position")
    .limit(limit)
    .execute();
  return rows.map((row) => toStoredEvent(row as never));
}
