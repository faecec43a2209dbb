import { randomBytes } from "node:crypto";
import { join } from "node:path";
import pg from "pg";
import { ensureFfmpeg, ensureLocalInfra, startSystem, type LocalInfra, type RunningSystem, type ServiceName } from "@renderbus/testing";

const repoRoot = join(import.meta.dirname, "..");

/**
 * Plan overrides for the benchmark orgs: rate limits out of the way (we measure the system, not the limiter's
 * refusals), room for a 1,000-job batch, queues without a practical cap (`maxQueuedJobs`), and `pro` made a plan
 * whose jobs wait (concurrency 1) so `POST /jobs` acceptance is measured without thousands of jobs running under it.
 */
export const BENCH_PLANS = {
  scale: { requestsPerMinute: 100_000_000, concurrency: 200, maxBatchSize: 1000, maxQueuedJobs: 100_000_000 },
  starter: { requestsPerMinute: 100_000_000 },
  pro: { requestsPerMinute: 100_000_000, concurrency: 1, maxRunSeconds: 3600, maxQueuedJobs: 100_000_000 },
};

/** A running system on fresh infrastructure, for one benchmark run. */
export interface BenchEnvironment {
  system: RunningSystem;
  infra: LocalInfra;
  /** The run's own database (created fresh on the server). */
  databaseUrl: string;
  namespace: string;
  /** Last lines each service printed, for error reports. */
  tail(service: ServiceName): string[];
  /** Calls `listener` with every line `service` prints from now on, until the returned function is called. */
  watch(service: ServiceName, listener: (line: string) => void): () => void;
  stop(): Promise<void>;
}

/** PostgreSQL settings that load pg_stat_statements (`--pg-statements`: see bench/pg-statements.ts). */
export const PG_STATEMENTS_SETTINGS = ["shared_preload_libraries=pg_stat_statements", "pg_stat_statements.max=1000"] as const;

/**
 * `extraEnv` goes to every service (e.g. NODE_OPTIONS with --cpu-prof for `--profile`); `postgresSettings` to the
 * run's PostgreSQL server.
 */
export async function startBenchEnvironment(log: (line: string) => void, extraEnv: Record<string, string> = {}, postgresSettings: readonly string[] = []): Promise<BenchEnvironment> {
  const infra = await ensureLocalInfra({ persistent: false, dataDir: join(repoRoot, ".data", "bench"), log, postgresSettings });
  // The worker runs ffmpeg; a fresh machine may not have it yet (benchmarks run without `npm test` before them).
  await ensureFfmpeg(log);
  const databaseUrl = await createDatabase(infra.databaseUrl);
  const namespace = `bench${randomBytes(4).toString("hex")}`;
  const tails = new Map<ServiceName, string[]>();
  const watchers = new Set<{ service: ServiceName; listener: (line: string) => void }>();
  let system: RunningSystem;
  try {
    system = await startSystem({
      repoRoot,
      databaseUrl,
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace,
      // No outputDir: the system makes its own for outputs and uploads, and its stop() (or a failed start) removes it.
      // The load comes from one address: the per-client budget (IP_REQUESTS_PER_MINUTE) is lifted like the plans'.
      env: { PLANS_JSON: JSON.stringify(BENCH_PLANS), MODE: "development", IP_REQUESTS_PER_MINUTE: "100000000", ...extraEnv },
      onLine: (service, line) => {
        const lines = tails.get(service) ?? [];
        lines.push(line);
        if (lines.length > 50) lines.shift();
        tails.set(service, lines);
        for (const watcher of watchers) if (watcher.service === service) watcher.listener(line);
      },
    });
  } catch (error) {
    await infra.stop().catch(() => undefined);
    throw error;
  }
  return {
    system,
    infra,
    databaseUrl,
    namespace,
    tail: (service) => tails.get(service) ?? [],
    watch: (service, listener) => {
      const watcher = { service, listener };
      watchers.add(watcher);
      return () => watchers.delete(watcher);
    },
    stop: async () => {
      await system.stop();
      await infra.stop().catch(() => undefined);
    },
  };
}

/** `create database` on the server: every run starts from empty schemas. */
async function createDatabase(serverUrl: string): Promise<string> {
  const name = `rb_bench_${randomBytes(5).toString("hex")}`;
  const client = new pg.Client({ connectionString: serverUrl });
  await client.connect();
  try {
    await client.query(`create database ${name}`);
  } finally {
    await client.end();
  }
  const url = new URL(serverUrl);
  url.pathname = `/${name}`;
  return url.toString();
}

/** The PostgreSQL server's version, for the report. */
export async function postgresVersion(databaseUrl: string): Promise<string> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    return (await client.query<{ server_version: string }>("show server_version")).rows[0]?.server_version ?? "unknown";
  } finally {
    await client.end();
  }
}
