import { sql } from "kysely";
import { preparedSql } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import type { webhooks } from "@renderbus/contracts";
import { attemptedChange, type AttemptedChange, type RecordedAttempt } from "../sending/decide-delivery.js";
import { DELIVERIES_UPDATED_HEADERS, DELIVERIES_UPDATED_SUBJECT, MAX_UPDATES_PER_MESSAGE, deliveryUpdateOf } from "./announcements.js";
import { notifyDue } from "./delivery-queue.js";
import type { DeliveryRow, DispatcherDb } from "./delivery.js";

export interface AttemptToRecord {
  /** The delivery as claimed: its new state and announcement are decided from it and the attempt, before the write. */
  delivery: DeliveryRow;
  leaseToken: string;
  attempt: RecordedAttempt;
  /** The attempt's trace context, carried by its update in the group's DeliveriesUpdated (which mixes many traces). */
  traceHeaders?: Record<string, string>;
}

/** The columns an attempt writes (its AttemptedChange), with their PostgreSQL types. */
const ATTEMPTED_COLUMNS = {
  attempts: "int",
  chain_attempts: "int",
  status: "text",
  next_attempt_at: "bigint",
  lease_until: "bigint",
  lease_token: "text",
  url: "text",
  last_attempt_at: "bigint",
  last_response_status: "int",
  last_error: "text",
  first_attempt_at: "bigint",
  announced: "boolean",
} as const satisfies Record<keyof AttemptedChange, string>;

/**
 * Stores attempts and their deliveries' new state, and announces them, in one statement (the sender batches attempts
 * that finish together: see GroupCommit). Returns, per attempt in order, the delivery's new row, or undefined when
 * the lease was lost meanwhile (another replica took the delivery over): that replica's outcome wins, and this
 * attempt writes neither an attempt row nor an update in the announcement.
 *
 * One statement (data-modifying CTEs) instead of a transaction of four: this runs for every attempt, and each round
 * trip costs a socket write and a wake-up here and a backend cycle in PostgreSQL. The new state is decided from the
 * claimed row (attemptedChange), which is what the database holds while the lease matches; each DeliveryUpdated is
 * built from that state, and the group's one DeliveriesUpdated outbox row aggregates those of the rows whose lease
 * still matched (none when no lease did): one publish, PubAck and consumed message per group instead of per attempt.
 */
export async function recordAttempts(db: DispatcherDb, attempts: AttemptToRecord[], now = Date.now()): Promise<Array<DeliveryRow | undefined>> {
  if (attempts.length === 0) return [];
  if (attempts.length > MAX_UPDATES_PER_MESSAGE) {
    // A group larger than one message may carry (DISPATCHER_CONCURRENCY set that high) is written in parts.
    const recorded: Array<DeliveryRow | undefined> = [];
    for (let start = 0; start < attempts.length; start += MAX_UPDATES_PER_MESSAGE) {
      recorded.push(...(await recordAttempts(db, attempts.slice(start, start + MAX_UPDATES_PER_MESSAGE), now)));
    }
    return recorded;
  }
  const changes = attempts.map((a) => attemptedChange(a.delivery, a.attempt));
  const columns = Object.keys(ATTEMPTED_COLUMNS) as Array<keyof typeof ATTEMPTED_COLUMNS>;
  // Each update carries its own attempt's trace; the message itself carries none (it belongs to no single trace).
  const updates = attempts.map((a, i) => deliveryUpdateOf({ ...a.delivery, ...changes[i]! }, now, a.traceHeaders));
  // The group's announcement, serialized here once; PostgreSQL filters it only when some lease did not match.
  const announcement = JSON.stringify({ updates } satisfies webhooks.DeliveriesUpdated);
  const column = <T>(pick: (a: AttemptToRecord) => T) => attempts.map(pick);
  const { rows } = await preparedSql<{ id: string }>`
    with v as (
      select * from unnest(
        ${column((a) => a.delivery.id)}::text[],
        ${column((a) => a.leaseToken)}::text[],
        ${sql.join(columns.map((name) => sql`${changes.map((change) => change[name])}::${sql.raw(ATTEMPTED_COLUMNS[name])}[]`))},
        ${column((a) => a.attempt.attempt)}::int[],
        ${column((a) => a.attempt.startedAt)}::bigint[],
        ${column((a) => a.attempt.responseStatus)}::int[],
        ${column((a) => a.attempt.error)}::text[],
        ${column((a) => a.attempt.latencyMs)}::int[],
        ${column((a) => a.attempt.responseExcerpt)}::text[],
        ${column((a) => (a.attempt.requestHeaders ? JSON.stringify(a.attempt.requestHeaders) : null))}::text[],
        ${column((a) => (a.attempt.responseHeaders ? JSON.stringify(a.attempt.responseHeaders) : null))}::text[],
        ${column((a) => a.attempt.slotAt ?? null)}::bigint[]
      ) with ordinality as v(id, claimed_lease_token, ${sql.join(columns.map((name) => sql.ref(name)))},
             attempt, started_at, response_status, error, latency_ms, response_excerpt, request_headers, response_headers, slot_at, n)
    ), updated as (
      update deliveries d set ${sql.join(columns.map((name) => sql`${sql.ref(name)} = v.${sql.ref(name)}`))}
      from v
      where d.id = v.id and d.lease_token = v.claimed_lease_token
      returning d.id
    ), recorded as (
      insert into delivery_attempts (delivery_id, attempt, started_at, response_status, error, latency_ms, response_excerpt, request_headers, response_headers, slot_at)
      select v.id, v.attempt, v.started_at, v.response_status, v.error, v.latency_ms, v.response_excerpt, v.request_headers::jsonb, v.response_headers::jsonb, v.slot_at
      from v join updated on updated.id = v.id
      on conflict (delivery_id, attempt) do nothing
    ), announced as (
      -- Nearly always every lease matched and the announcement goes as built; otherwise only the matched rows' updates.
      insert into outbox (message_id, subject, body, headers, created_at)
      select ${newId("evt")}, ${DELIVERIES_UPDATED_SUBJECT},
             case when matched.n = ${attempts.length}::int then m.body::jsonb
                  else jsonb_build_object('updates', (
                    select jsonb_agg(u.value order by u.n) from jsonb_array_elements(m.body::jsonb -> 'updates') with ordinality as u(value, n)
                    where u.value ->> 'deliveryId' in (select id from updated)))
             end,
             ${JSON.stringify(DELIVERIES_UPDATED_HEADERS)}::jsonb, ${now}
      from (select count(*)::int as n from updated) matched, (select ${announcement}::text as body) m
      where matched.n > 0
    )
    select id from updated`.execute(db);
  // The new rows are the claimed rows with their change applied: nothing else moves while the lease matches, so
  // only the ids that matched come back (a whole row per attempt was most of the bytes this statement read).
  const matched = new Set(rows.map((row) => row.id));
  const updated = attempts.map((a, i) => (matched.has(a.delivery.id) ? { ...a.delivery, ...changes[i]! } : undefined));
  // A retry is due later: wake every replica's sender so it sleeps until then (after the commit, like a NOTIFY).
  if (updated.some((row) => row !== undefined && row.next_attempt_at !== null)) await notifyDue(db);
  return updated;
}
