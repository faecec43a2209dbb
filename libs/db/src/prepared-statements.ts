import { createHash } from "node:crypto";
import { sql, type RawBuilder } from "kysely";
import type pg from "pg";

/**
 * Marks a statement to be prepared once per connection (see {@link preparingPool}). Only for statements whose text
 * never changes between calls (values are parameters, never `sql.raw` or a list whose length varies): each distinct
 * text is a statement PostgreSQL keeps for the connection's life.
 */
const PREPARE_MARKER = "/* rb:prepared */ ";

/** Past this many distinct marked texts in a process, the rest run unprepared (a text that varies by mistake). */
const MAX_PREPARED_TEXTS = 200;

/** SQLSTATE 0A000 "cached plan must not change result type": the statement's tables changed under it (a migration). */
const FEATURE_NOT_SUPPORTED = "0A000";

/**
 * `sql` for a hot statement: prepared once per connection and executed by name afterwards, so PostgreSQL parses,
 * analyzes and plans it once (a generic plan once it is as cheap as the custom ones) instead of on every call, and the
 * client sends a Bind with the values instead of the whole text. For statements that run for every group of
 * deliveries or jobs; the rest stay plain `sql`.
 */
export function preparedSql<T>(strings: TemplateStringsArray, ...values: unknown[]): RawBuilder<T> {
  const marked = [PREPARE_MARKER + strings[0], ...strings.slice(1)];
  const template = Object.assign(marked, { raw: [PREPARE_MARKER + strings.raw[0], ...strings.raw.slice(1)] }) as unknown as TemplateStringsArray;
  return sql<T>(template, ...values);
}

type QueryResult = { command: string; rowCount: number | null; rows: unknown[] };

/** What kysely's PostgresDialect uses of a pool. */
export interface KyselyPool {
  connect(): Promise<KyselyPoolClient>;
  end(): Promise<void>;
}

interface KyselyPoolClient {
  query(text: string, values: unknown[]): Promise<QueryResult>;
  release(): void;
}

/**
 * Wraps a pg pool for kysely so that statements built with {@link preparedSql} run as named prepared statements.
 * Their names derive from their text, so every connection (and every replica) names a statement alike. When a
 * migration changes a table under a prepared statement's result (`returning *` after a column was added), PostgreSQL
 * refuses the old one; the text then gets a new name (prepared afresh on each connection) and the call is made again
 * once, unless it ran inside a transaction (which that error aborted: the caller's own retry runs it again).
 */
export function preparingPool(pool: pg.Pool): KyselyPool {
  const names = new Map<string, string>();
  const generations = new Map<string, number>();
  const nameOf = (text: string): string | undefined => {
    let name = names.get(text);
    if (name === undefined) {
      if (names.size >= MAX_PREPARED_TEXTS) return undefined;
      name = `rb_${createHash("sha1").update(text).digest("hex").slice(0, 20)}_${generations.get(text) ?? 0}`;
      names.set(text, name);
    }
    return name;
  };
  const renew = (text: string) => {
    generations.set(text, (generations.get(text) ?? 0) + 1);
    names.delete(text);
  };
  const wrappers = new WeakMap<pg.PoolClient, KyselyPoolClient>();
  const wrap = (client: pg.PoolClient): KyselyPoolClient => {
    let wrapper = wrappers.get(client);
    if (wrapper) return wrapper;
    const run = (text: string, values: unknown[]): Promise<QueryResult> => {
      if (!text.startsWith(PREPARE_MARKER)) return client.query(text, values);
      const name = nameOf(text);
      return name === undefined ? client.query(text, values) : client.query({ name, text, values });
    };
    wrapper = {
      async query(text, values) {
        try {
          return await run(text, values);
        } catch (error) {
          if ((error as { code?: string }).code !== FEATURE_NOT_SUPPORTED || !text.startsWith(PREPARE_MARKER)) throw error;
          renew(text);
          if (client.getTransactionStatus() !== "I") throw error;
          return run(text, values);
        }
      },
      release: () => client.release(),
    };
    wrappers.set(client, wrapper);
    return wrapper;
  };
  return {
    connect: async () => wrap(await pool.connect()),
    end: () => pool.end(),
  };
}
