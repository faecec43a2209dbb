import type { Kysely, Transaction } from "kysely";
import type { EventStoreTables } from "./event-store-schema.js";
import type { StoredEvent } from "./append-to-stream.js";

type EventRow = EventStoreTables["events"] & { global_position: number; metadata: Record<string, string> };

export function toStoredEvent(row: Omit<EventRow, "transaction_id">): StoredEvent {
  return {
    eventId: row.event_id,
    streamId: row.stream_id,
    version: row.version,
    type: row.type,
    data: row.data,
    globalPosition: row.global_position,
    metadata: row.metadata,
    createdAt: row.created_at,
  };
}

/** All events of one stream in version order (empty for a stream that does not exist). */
export async function readStream<DB extends EventStoreTables>(
  db: Kysely<DB> | Transaction<DB>,
  streamId: string,
): Promise<StoredEvent[]> {
  const rows = await (db as unknown as Kysely<EventStoreTables>)
    .selectFrom("events")
    .select(["global_position", "event_id", "stream_id", "version", "type", "data", "metadata", "created_at"])
    .where("stream_id", "=", streamId)
    .orderBy("version")
    .execute();
  return rows.map((row) => toStoredEvent(row as never));
}
