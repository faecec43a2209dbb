import { sql, type Kysely, type RawBuilder, type SqlBool } from "kysely";
import type { Logger } from "@renderbus/telemetry";
import { assertIdentifier } from "./database.js";

/** Rows deleted per statement: small enough that no sweep statement holds its row locks for long. */
export const PRUNE_BATCH_SIZE = 1000;

export interface DeleteInBatchesOptions {
  batchSize?: number;
  /** Checked between statements: a stopping service ends its sweep after the statement in flight. */
  stopping?: () => boolean;
}

/**
 * Deletes the rows of `table` (in the connection's schema) that match `where`, `batchSize` rows per statement, until
 * a statement finds fewer. Returns how many rows went.
 *
 * Each statement picks its rows with `FOR UPDATE SKIP LOCKED` and deletes them by `ctid` (a TID scan), so it holds
 * locks on at most one batch for the length of one short statement, and replicas sweeping at the same time split
 * the rows between them instead of waiting on each other: running the sweep on every replica is safe. A row a
 * writer holds is left for the next sweep.
 */
export async function deleteInBatches(
  db: Kysely<any>,
  table: string,
  where: RawBuilder<SqlBool>,
  { batchSize = PRUNE_BATCH_SIZE, stopping }: DeleteInBatchesOptions = {},
): Promise<number> {
  assertIdentifier(table);
  if (!Number.isSafeInteger(batchSize) || batchSize < 1) throw new Error(`invalid prune batch size: ${batchSize}`);
  let total = 0;
  for (;;) {
    const result = await sql`
      delete from ${sql.table(table)}
      where ctid = any(array(select ctid from ${sql.table(table)} where ${where} limit ${batchSize} for update skip locked))`.execute(db);
    const deleted = Number(result.numAffectedRows ?? 0);
    total += deleted;
    if (deleted < batchSize || stopping?.()) return total;
  }
}

/** One table's pruning: deletes what is past its retention at `now`, returns how many rows went. */
export interface RetentionStep {
  /** Names the step in logs, e.g. `idempotency_keys`. */
  name: string;
  prune(now: number, stopping: () => boolean): Promise<number>;
}

export interface RetentionSweeperOptions {
  steps: RetentionStep[];
  /** Time between sweeps. The first runs after this or one minute, whichever is sooner, to keep start-up light. */
  intervalMs: number;
  logger?: Logger;
}

export interface RetentionSweeper {
  /** Runs every step once now (tests, operators); resolves with the rows deleted per step. */
  sweep(now?: number): Promise<Record<string, number>>;
  /** Stops the timer and waits for a sweep in flight, which ends after its current statement. */
  stop(): Promise<void>;
}

/**
 * Runs a service's retention steps on a timer. Steps run one after another; a failing step is logged and the others
 * still run (the next sweep retries it). A tick that finds the previous sweep still running is skipped.
 */
export function startRetentionSweeper({ steps, intervalMs, logger }: RetentionSweeperOptions): RetentionSweeper {
  let stopped = false;
  let ticking = false;
  /** The sweep in flight (or the last one): sweeps never overlap, and stop() waits for this. */
  let chain: Promise<unknown> = Promise.resolve();
  const stopping = () => stopped;

  const runSteps = async (now: number): Promise<Record<string, number>> => {
    const deleted: Record<string, number> = {};
    for (const step of steps) {
      if (stopped) break;
      try {
        deleted[step.name] = await step.prune(now, stopping);
      } catch (error) {
        logger?.warn({ err: error, step: step.name }, "retention step failed; the next sweep retries it");
      }
    }
    const total = Object.values(deleted).reduce((sum, count) => sum + count, 0);
    if (total > 0) logger?.info({ deleted }, "retention sweep deleted expired rows");
    return deleted;
  };

  const sweep = (now = Date.now()): Promise<Record<string, number>> => {
    const result = chain.then(() => runSteps(now));
    chain = result.catch(() => undefined);
    return result;
  };

  const tick = () => {
    if (ticking || stopped) return;
    ticking = true;
    sweep()
      .catch((error: unknown) => logger?.warn({ err: error }, "retention sweep failed"))
      .finally(() => (ticking = false));
  };
  const first = setTimeout(tick, Math.min(intervalMs, 60_000));
  const timer = setInterval(tick, intervalMs);
  first.unref();
  timer.unref();

  return {
    sweep,
    stop: async () => {
      stopped = true;
      clearTimeout(first);
      clearInterval(timer);
      await chain;
    },
  };
}
