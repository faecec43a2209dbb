import pg from "pg";
import { randomBytes } from "node:crypto";
import { testInfra } from "./test-infra.js";

/**
 * A fresh, empty database for one test file on the run's PostgreSQL server; services migrate their own schemas
 * into it. Returns its URL. Databases are left for the server's teardown (the test server is thrown away whole).
 */
export async function createTestDatabase(label = "t"): Promise<string> {
  const { databaseUrl } = testInfra();
  const name = `rb_${label.replace(/[^a-z0-9]/gi, "").toLowerCase().slice(0, 20)}_${randomBytes(5).toString("hex")}`;
  const admin = new pg.Client({ connectionString: databaseUrl });
  await admin.connect();
  try {
    await admin.query(`create database ${name}`);
  } finally {
    await admin.end();
  }
  const url = new URL(databaseUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** A NATS subject/stream namespace unique to one test file, so files can share one server. */
export function testNamespace(label = "t"): string {
  return `t${label.replace(/[^a-z0-9]/gi, "").toLowerCase().slice(0, 12)}${randomBytes(4).toString("hex")}`;
}

/**
 * Records the text of every statement the pool's connections send from now on (`begin` and `commit` included), in
 * order: for tests of how many round trips something costs.
 */
export function recordStatements(pool: pg.Pool): { statements: string[]; stop(): void } {
  const statements: string[] = [];
  let recording = true;
  const wrapped = new WeakSet<object>();
  const record = (client: pg.PoolClient) => {
    if (wrapped.has(client)) return;
    wrapped.add(client);
    const query = client.query.bind(client) as (...args: unknown[]) => unknown;
    (client as { query: unknown }).query = (...args: unknown[]) => {
      const [first] = args;
      if (recording) statements.push(typeof first === "string" ? first : String((first as { text?: string }).text));
      return query(...args);
    };
  };
  pool.on("acquire", record);
  return {
    statements,
    stop: () => {
      recording = false;
      pool.off("acquire", record);
    },
  };
}
