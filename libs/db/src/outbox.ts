import type { Transaction } from "kysely";
import { currentTraceHeaders } from "@renderbus/telemetry";
import type { EventStoreTables } from "./event-store-schema.js";

/** A message to publish once the surrounding transaction commits. */
export interface OutboxMessage {
  /** Becomes `Nats-Msg-Id`: JetStream drops a repeat inside its duplicate window. Use the event id. */
  messageId: string;
  /** Logical subject, e.g. `jobs.events.job.completed`. */
  subject: string;
  body: unknown;
  headers?: Record<string, string>;
}

/**
 * The `outbox` rows for `messages`, carrying `trace` (the current trace context by default) in their headers under
 * each message's own. Pass `{}` when every message carries its own trace (a batch mixing many).
 */
export function outboxRowsOf(messages: OutboxMessage[], now: number, trace: Record<string, string> = currentTraceHeaders()) {
  return messages.map((message) => ({
    message_id: message.messageId,
    subject: message.subject,
    body: JSON.stringify(message.body),
    headers: JSON.stringify({ ...trace, ...message.headers }),
    created_at: now,
  }));
}

/** Inserts outbox rows inside the caller's transaction (the `beforeCommit` step of the write path). */
export async function enqueueOutbox<DB extends EventStoreTables>(trx: Transaction<DB>, messages: OutboxMessage[], now = Date.now()): Promise<void> {
  if (messages.length === 0) return;
  await (trx as unknown as Transaction<EventStoreTables>)
    .insertInto("outbox")
    .values(outboxRowsOf(messages, now) as never)
    .execute();
}
