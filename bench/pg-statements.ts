import type pg from "pg";

/** One statement's share of some rounds, from pg_stat_statements. */
export interface StatementSample {
  query: string;
  calls: number;
  /** Execution time, ms (total_exec_time). */
  execMs: number;
}

/** A statement's cost per delivery over a sender's measured rounds. */
export interface StatementCost {
  /** The normalized text, whitespace collapsed, cut to 160 characters. */
  query: string;
  usPerDelivery: number;
  callsPerDelivery: number;
}

/**
 * `--pg-statements`: what each statement of a round cost in PostgreSQL, from pg_stat_statements (loaded by the run's
 * server: PG_STATEMENTS_SETTINGS). Reset before a round, read after it; only the run's database counts.
 */
export class RoundStatements {
  private constructor(private readonly client: pg.Client) {}

  /** Creates the extension in the run's database. @throws when the server did not load the library. */
  static async open(client: pg.Client): Promise<RoundStatements> {
    await client.query("create extension if not exists pg_stat_statements");
    return new RoundStatements(client);
  }

  async reset(): Promise<void> {
    await this.client.query("select pg_stat_statements_reset()");
  }

  /** The statements since the last reset, in the run's database. */
  async read(): Promise<StatementSample[]> {
    const { rows } = await this.client.query<{ query: string; calls: string; exec_ms: number }>(
      `select query, calls::text, total_exec_time as exec_ms from pg_stat_statements
       where dbid = (select oid from pg_database where datname = current_database())`,
    );
    return rows.map((row) => ({ query: row.query, calls: Number(row.calls), execMs: row.exec_ms }));
  }
}

/**
 * The `limit` statements that took the most execution time over `samples` (one sender's rounds, together), per
 * delivery. The same normalized statement in several rounds adds up.
 */
export function costliestStatements(samples: StatementSample[], deliveries: number, limit = 8): StatementCost[] {
  const byQuery = new Map<string, { calls: number; execMs: number }>();
  for (const sample of samples) {
    const query = sample.query.replace(/\s+/g, " ").trim().slice(0, 160);
    const sum = byQuery.get(query) ?? { calls: 0, execMs: 0 };
    sum.calls += sample.calls;
    sum.execMs += sample.execMs;
    byQuery.set(query, sum);
  }
  const per = Math.max(1, deliveries);
  return [...byQuery]
    .sort(([, a], [, b]) => b.execMs - a.execMs)
    .slice(0, limit)
    .map(([query, sum]) => ({ query, usPerDelivery: Math.round((sum.execMs * 1000 * 10) / per) / 10, callsPerDelivery: Math.round((sum.calls * 100) / per) / 100 }));
}
