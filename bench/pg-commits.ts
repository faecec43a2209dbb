import type pg from "pg";

/**
 * Transactions committed in the client's database so far (every statement outside a transaction is one): the
 * difference over a round says how many round trips to PostgreSQL a delivery cost. The statistics collector reports
 * with a delay of up to a second; `pg_stat_force_next_flush` (PostgreSQL 15+) asks for the current count.
 */
export async function databaseCommits(client: pg.Client): Promise<number> {
  const sql = (flush: boolean) => `select ${flush ? "pg_stat_force_next_flush(), " : ""}xact_commit::text as n from pg_stat_database where datname = current_database()`;
  const { rows } = await client.query<{ n: string }>(sql(true)).catch(() => client.query<{ n: string }>(sql(false)));
  return Number(rows[0]!.n);
}
