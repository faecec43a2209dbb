import pg from "pg";
import type { Bus } from "@renderbus/bus";
import type { Logger } from "@renderbus/telemetry";
import { assertIdentifier } from "./database.js";
import { startNotificationListener } from "./notification-listener.js";

export interface OutboxRelayOptions {
  pool: pg.Pool;
  schema: string;
  bus: Bus;
  logger?: Logger;
  /** Rows claimed and published per round; publishes inside a round are pipelined, not awaited one by one. */
  batchSize?: number;
  /**
   * Safety-net poll. Every insert NOTIFYs, and the LISTEN connection is listened on again after a loss (which counts
   * as a notification), so this only bounds what nothing should miss; each idle poll costs two round trips.
   */
  pollIntervalMs?: number;
}

export interface OutboxRelay {
  /**
   * Resolves once the outbox is empty (used by tests and graceful shutdown), or after `timeoutMs` when given: a
   * shutdown must not hang on an unreachable NATS, and rows left behind are published by the next relay (same msg
   * ids, deduplicated by JetStream).
   */
  drained(timeoutMs?: number): Promise<void>;
  /** Current number of unpublished rows (for metrics). */
  backlog(): Promise<number>;
  stop(): Promise<void>;
}

interface OutboxRow {
  position: number;
  message_id: string;
  subject: string;
  /** The stored JSON text (see `body::text` in the round). */
  body: string;
  headers: Record<string, string>;
}

/**
 * Publishes outbox rows to JetStream and deletes them once JetStream has acknowledged them.
 *
 * Rows are claimed with `FOR UPDATE SKIP LOCKED`, so several relays (replicas) share the work without publishing a
 * row twice at the same time. A relay killed between publish and delete leaves its rows in place; the next round
 * publishes them again with the same `Nats-Msg-Id`, which JetStream drops as duplicates. Wakes on the
 * `<schema>_outbox` NOTIFY channel (notification-listener.ts), with a slow poll as the fallback.
 */
export async function startOutboxRelay({
  pool,
  schema,
  bus,
  logger,
  batchSize = 500,
  pollIntervalMs = 5000,
}: OutboxRelayOptions): Promise<OutboxRelay> {
  assertIdentifier(schema);
  // Checked before the LISTEN connection and the poll exist: a refused relay leaves nothing running behind it.
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) throw new Error(`invalid outbox batch size: ${batchSize}`);
  let stopped = false;
  let wake: (() => void) | undefined;
  let pending = true;
  const idleWaiters: (() => void)[] = [];

  const signal = () => {
    pending = true;
    wake?.();
  };
  const listener = await startNotificationListener({ connectionString: connectionStringOf(pool), channel: `${schema}_outbox`, onNotify: signal, ...(logger ? { logger } : {}) });
  const poller = setInterval(signal, pollIntervalMs);

  // `body::text`: the publisher gets the JSON text as stored, instead of objects parsed only to be serialized again
  // (a measurable share of a busy relay's CPU).
  const claim = `begin; select position, message_id, subject, body::text as body, headers from ${schema}.outbox
    order by position limit ${batchSize} for update skip locked`;

  /**
   * One round: claim, publish all (pipelined), delete. Returns how many rows were published. Two round trips to
   * PostgreSQL, not four: BEGIN travels with the claim and COMMIT with the delete, as multi-statement simple queries
   * (no bind parameters there: the batch size and the claimed positions are integers, checked).
   */
  const round = async (): Promise<number> => {
    const client = await pool.connect();
    try {
      const [, claimed] = (await client.query(claim)) as unknown as [pg.QueryResult, pg.QueryResult<OutboxRow>];
      const rows = claimed.rows;
      if (rows.length === 0) {
        await client.query("commit");
        return 0;
      }
      const publishes = rows.map((row) => bus.publish(row.subject, row.body, { msgId: row.message_id, headers: row.headers }));
      await Promise.all(publishes);
      const positions = rows.map((row) => String(row.position));
      if (!positions.every((position) => /^[0-9]+$/.test(position))) throw new Error("outbox position is not an integer");
      await client.query(`delete from ${schema}.outbox where position = any('{${positions.join(",")}}'::bigint[]); commit`);
      return rows.length;
    } catch (error) {
      await client.query("rollback").catch(() => undefined);
      throw error;
    } finally {
      client.release();
    }
  };

  const loop = (async () => {
    let failures = 0;
    while (!stopped) {
      if (!pending) {
        for (const resolve of idleWaiters.splice(0)) resolve();
        await new Promise<void>((resolve) => (wake = resolve));
        wake = undefined;
        continue;
      }
      pending = false;
      try {
        const published = await round();
        failures = 0;
        // A full round may have left rows behind; anything inserted since the claim NOTIFYs on its own.
        if (published === batchSize) pending = true;
      } catch (error) {
        failures += 1;
        logger?.warn({ err: error, failures }, "outbox relay round failed; retrying");
        await sleep(Math.min(100 * 2 ** failures, 5000));
        pending = true;
      }
    }
  })();

  return {
    drained: (timeoutMs) =>
      new Promise<void>((resolve) => {
        idleWaiters.push(resolve);
        if (timeoutMs !== undefined) setTimeout(resolve, timeoutMs).unref();
        signal();
      }),
    backlog: async () => {
      const { rows } = await pool.query<{ count: number }>(`select count(*)::int as count from ${schema}.outbox`);
      return rows[0]?.count ?? 0;
    },
    stop: async () => {
      stopped = true;
      clearInterval(poller);
      wake?.();
      await loop;
      for (const resolve of idleWaiters.splice(0)) resolve();
      await listener.stop();
    },
  };
}

function connectionStringOf(pool: pg.Pool): string {
  const options = pool.options as pg.PoolConfig;
  return options.connectionString ?? "";
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
