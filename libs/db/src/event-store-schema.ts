import { sql, type Kysely } from "kysely";

/**
 * Tables of the event store and the outbox, created by a service migration inside the service's schema.
 * - `events.transaction_id` records the writing transaction so readers by global position can stop before
 *   positions whose transactions are still in flight (bigserial values are handed out before commit).
 * - `outbox` rows are inserted in the same transaction as the events they announce; an insert trigger NOTIFYs the
 *   relay so it wakes at once instead of polling.
 */
export async function createEventStoreTables(db: Kysely<any>, schema: string): Promise<void> {
  await sql`
    create table events (
      global_position bigserial primary key,
      event_id text not null unique,
      stream_id text not null,
      version integer not null,
      type text not null,
      data jsonb not null,
      metadata jsonb not null default '{}'::jsonb,
      transaction_id xid8 not null default pg_current_xact_id(),
      created_at bigint not null,
      constraint events_stream_version unique (stream_id, version)
    )`.execute(db);
  await sql`
    create table outbox (
      position bigserial primary key,
      message_id text not null,
      subject text not null,
      body jsonb not null,
      headers jsonb not null default '{}'::jsonb,
      created_at bigint not null
    )`.execute(db);
  await sql.raw(`
    create function ${schema}.notify_outbox() returns trigger language plpgsql as $$
    begin
      perform pg_notify('${schema}_outbox', '');
      return null;
    end $$;
    create trigger outbox_notify after insert on ${schema}.outbox
      for each statement execute function ${schema}.notify_outbox();
  `).execute(db);
}

export interface EventStoreTables {
  events: {
    global_position: import("kysely").Generated<number>;
    event_id: string;
    stream_id: string;
    version: number;
    type: string;
    data: unknown;
    metadata: import("kysely").ColumnType<Record<string, string>, Record<string, string> | undefined, never>;
    transaction_id: import("kysely").Generated<string>;
    created_at: number;
  };
  outbox: {
    position: import("kysely").Generated<number>;
    message_id: string;
    subject: string;
    body: unknown;
    headers: import("kysely").ColumnType<Record<string, string>, Record<string, string> | string | undefined, never>;
    created_at: number;
  };
}
