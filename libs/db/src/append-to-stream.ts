import { type Transaction } from "kysely";
import { newId } from "@renderbus/ids";
import { currentTraceHeaders } from "@renderbus/telemetry";
import { isUniqueViolation } from "./database.js";
import type { EventStoreTables } from "./event-store-schema.js";

/** An event as decided by domain code, before it is stored. */
export interface NewEvent<Type extends string = string, Data = unknown> {
  type: Type;
  data: Data;
}

/** An event as stored. */
export interface StoredEvent<Type extends string = string, Data = unknown> extends NewEvent<Type, Data> {
  eventId: string;
  streamId: string;
  version: number;
  globalPosition: number;
  metadata: Record<string, string>;
  createdAt: number;
}

/**
 * Thrown by appendToStream when the stream is no longer at the expected version: another writer appended first.
 * The caller reloads the stream and decides again (or reports CONFLICT).
 */
export class ConcurrencyError extends Error {
  override readonly name = "ConcurrencyError";
  constructor(
    readonly streamId: string,
    readonly expectedVersion: number,
  ) {
    super(`stream ${streamId} is not at version ${expectedVersion}`);
  }
}

/**
 * The `events` rows for appending `events` at `expectedVersion + 1 ...`, with the current trace context as metadata.
 * `appendToStream` writes them; a caller creating a brand-new stream may write them in a statement of its own.
 */
export function eventRowsOf(streamId: string, expectedVersion: number, events: NewEvent[], now: number) {
  const metadata = currentTraceHeaders();
  const rows = events.map((event, index) => ({
    event_id: newId("evt"),
    stream_id: streamId,
    version: expectedVersion + index + 1,
    type: event.type,
    data: JSON.stringify(event.data),
    metadata: JSON.stringify(metadata),
    created_at: now,
  }));
  return { rows, metadata };
}

/**
 * Appends events at `expectedVersion + 1 ...` inside the caller's transaction, so that projections and outbox rows
 * written in the same transaction commit or vanish with them. Optimistic concurrency rests on
 * `unique (stream_id, version)`: of two writers at the same expected version, the second fails on commit order.
 * Trace context is stored with each event so consumers continue the request's trace.
 */
export async function appendToStream<DB extends EventStoreTables>(
  trx: Transaction<DB>,
  streamId: string,
  expectedVersion: number,
  events: NewEvent[],
  now = Date.now(),
): Promise<StoredEvent[]> {
  if (events.length === 0) return [];
  const { rows, metadata } = eventRowsOf(streamId, expectedVersion, events, now);
  const db = trx as unknown as Transaction<EventStoreTables>;
  try {
    // No savepoint: after a conflict PostgreSQL aborts the caller's transaction, which then retries from the start.
    const inserted = await db
      .insertInto("events")
      .values(rows as never)
      .returning(["global_position", "event_id", "version"])
      .execute();
    return inserted.map((row, index) => ({
      ...events[index]!,
      eventId: row.event_id,
      streamId,
      version: row.version,
      globalPosition: row.global_position,
      metadata,
      createdAt: now,
    }));
  } catch (error) {
    if (isUniqueViolation(error, "events_stream_version")) throw new ConcurrencyError(streamId, expectedVersion);
    throw error;
  }
}
