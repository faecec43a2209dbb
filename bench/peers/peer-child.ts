/**
 * Entry of a peer sender process (bench/peers/peer-sender.ts starts it with an IPC channel; never run by hand): a
 * webhook sender built on a well-known PostgreSQL job queue, as a team would write it instead of using our dispatcher.
 *
 * Same guarantees as the dispatcher, the queue's way: a webhook is a job committed to PostgreSQL before anything is
 * sent (jobs are added in bulk, one statement per window of 256, as our ingest writes a group of events); each attempt
 * inserts a row into the peer's own attempts table before the job is settled; a failed attempt throws and the queue
 * retries it with its exponential backoff, up to 4 attempts (ours: 1 + 3 retries). Same limits as the dispatcher:
 * 64 attempts in flight, a pool of 10 PostgreSQL connections, the same HTTP client and socket cap (webhook-post.ts).
 *
 * Messages in: {type:"burst", count, prefix, orgs, url} -> enqueues `count` webhooks and answers {type:"enqueued"};
 * {type:"drain"} -> answers {type:"drained"} once no job is left; {type:"stop"}. Out first: {type:"ready"}.
 */
import { randomUUID } from "node:crypto";
import pg from "pg";
import { Logger, makeWorkerUtils, run, type Runner, type WorkerUtils } from "graphile-worker";
import { PgBoss } from "pg-boss";
import { createPeerAgent, postPeerWebhook, type PeerAttempt } from "./webhook-post.js";

export type PeerKind = "graphile-worker" | "pg-boss";

export interface PeerConfig {
  kind: PeerKind;
  databaseUrl: string;
  concurrency: number;
  poolSize: number;
  secret: string;
}

export type PeerCommand =
  | { type: "burst"; count: number; prefix: string; url: string }
  | { type: "drain" }
  | { type: "stop" };

/** A webhook as a job payload: everything its attempts need, built once at enqueue (as our ingest does). */
interface WebhookJob {
  deliveryId: string;
  url: string;
  event: string;
  body: string;
}

const config = JSON.parse(process.argv[2] ?? "{}") as PeerConfig;
const MAX_ATTEMPTS = 4;
const ENQUEUE_WINDOW = 256;
const send = (message: unknown) => process.send!(message);
const agent = createPeerAgent();

const attemptsTable = (schema: string) => `
  create table if not exists ${schema}.attempts (
    id bigserial primary key,
    delivery_id text not null,
    attempt int not null,
    started_at bigint not null,
    response_status int,
    error text,
    latency_ms int not null
  )`;
const insertAttempt = (schema: string) =>
  `insert into ${schema}.attempts (delivery_id, attempt, started_at, response_status, error, latency_ms) values ($1, $2, $3, $4, $5, $6)`;
const attemptValues = (job: WebhookJob, attempt: number, result: PeerAttempt) => [job.deliveryId, attempt, result.startedAt, result.status, result.error, result.latencyMs];

function webhookJobs(command: Extract<PeerCommand, { type: "burst" }>): WebhookJob[] {
  const now = Date.now();
  return Array.from({ length: command.count }, (_, n) => {
    const jobId = `${command.prefix}${n}`;
    return {
      deliveryId: `del_${randomUUID()}`,
      url: command.url,
      event: "job.running",
      body: JSON.stringify({ event: "job.running", jobId, type: "extract.metadata", timing: { createdAt: now, startedAt: now } }),
    };
  });
}

/** One attempt of a job: POST, record the attempt; throws on failure so the queue schedules the retry. */
async function attemptJob(job: WebhookJob, attempt: number, record: (values: unknown[]) => Promise<unknown>): Promise<void> {
  const result = await postPeerWebhook(agent, { ...job, attempt, secret: config.secret });
  await record(attemptValues(job, attempt, result));
  if (result.error !== null) throw new Error(`attempt ${attempt} failed: ${result.error}`);
}

interface Peer {
  enqueue(jobs: WebhookJob[]): Promise<void>;
  pending(): Promise<number>;
  stop(): Promise<void>;
}

async function startGraphileWorker(): Promise<Peer> {
  const schema = "peer_graphile_worker";
  const pgPool = new pg.Pool({ connectionString: config.databaseUrl, max: config.poolSize });
  await pgPool.query(`create schema if not exists ${schema}`);
  await pgPool.query(attemptsTable(schema));
  const utils: WorkerUtils = await makeWorkerUtils({ pgPool, schema: `${schema}_queue` });
  await utils.migrate();
  const runner: Runner = await run({
    pgPool,
    noHandleSignals: true,
    // Its documented throughput settings (worker.graphile.org/docs/performance): a local queue of locked jobs a
    // little larger than the concurrency, and completions batched over a tick.
    preset: {
      worker: {
        schema: `${schema}_queue`,
        concurrentJobs: config.concurrency,
        maxPoolSize: config.poolSize,
        pollInterval: 1000,
        localQueue: { size: config.concurrency + 1 },
        completeJobBatchDelay: 0,
        failJobBatchDelay: 0,
      },
    },
    logger: quietGraphileLogger(),
    taskList: {
      deliver: async (payload, helpers) => {
        const job = payload as WebhookJob;
        await attemptJob(job, helpers.job.attempts, (values) => helpers.query(insertAttempt(schema), values));
      },
    },
  });
  return {
    async enqueue(jobs) {
      await utils.addJobs(jobs.map((job) => ({ identifier: "deliver", payload: job, maxAttempts: MAX_ATTEMPTS })));
    },
    async pending() {
      const { rows } = await pgPool.query<{ count: number }>(`select count(*)::int as count from ${schema}_queue._private_jobs`);
      return rows[0]!.count;
    },
    async stop() {
      await runner.stop();
      await utils.release();
      await pgPool.end();
    },
  };
}

/** Warnings and errors only: the dispatcher runs at info but logs no line per successful attempt either. */
function quietGraphileLogger(): Logger {
  return new Logger(() => (level, message) => {
    if (level === "error" || level === "warning") process.stderr.write(`graphile-worker ${level}: ${message}\n`);
  });
}

async function startPgBoss(): Promise<Peer> {
  const schema = "peer_pg_boss";
  const pgPool = new pg.Pool({ connectionString: config.databaseUrl, max: 1 });
  await pgPool.query(`create schema if not exists ${schema}`);
  await pgPool.query(attemptsTable(schema));
  await pgPool.end();
  // Its LISTEN/NOTIFY wake-up on (one of the pool's connections), so a new job does not wait for a poll.
  const boss = new PgBoss({ connectionString: config.databaseUrl, schema: `${schema}_queue`, max: config.poolSize, useListenNotify: true });
  boss.on("error", (error: Error) => process.stderr.write(`pg-boss: ${error.message}\n`));
  await boss.start();
  const queue = "webhooks";
  await boss.createQueue(queue, { retryLimit: MAX_ATTEMPTS - 1, retryDelay: 5, retryBackoff: true, notify: true });
  const db = boss.getDb();
  // 8 workers x batches of 8 = 64 in flight; each job of a batch is settled on its own (perJobResults), and a full
  // batch fetches the next at once.
  const batchSize = 8;
  await boss.work<WebhookJob>(
    queue,
    { localConcurrency: config.concurrency / batchSize, batchSize, includeMetadata: true, perJobResults: true, burstWhenBatchFull: true, pollingIntervalSeconds: 0.5, notifyPollingIntervalSeconds: 5 },
    async (jobs) =>
      Promise.all(
        jobs.map(async (job) => {
          try {
            await attemptJob(job.data, job.retryCount + 1, (values) => db.executeSql(insertAttempt(schema), values));
            return { id: job.id, status: "completed" as const };
          } catch (error) {
            return { id: job.id, status: "failed" as const, output: { message: (error as Error).message } };
          }
        }),
      ),
  );
  return {
    async enqueue(jobs) {
      await boss.insert(queue, jobs.map((data) => ({ data })));
    },
    async pending() {
      const { rows } = await db.executeSql(`select count(*)::int as count from ${schema}_queue.job where name = $1 and state in ('created', 'retry', 'active')`, [queue]);
      return (rows[0] as { count: number }).count;
    },
    async stop() {
      await boss.stop({ graceful: true });
    },
  };
}

async function main() {
  const peer = config.kind === "graphile-worker" ? await startGraphileWorker() : await startPgBoss();
  process.on("message", (command: PeerCommand) => {
    void (async () => {
      switch (command.type) {
        case "burst": {
          const jobs = webhookJobs(command);
          for (let sent = 0; sent < jobs.length; sent += ENQUEUE_WINDOW) await peer.enqueue(jobs.slice(sent, sent + ENQUEUE_WINDOW));
          send({ type: "enqueued" });
          return;
        }
        case "drain":
          while ((await peer.pending()) > 0) await new Promise((resolve) => setTimeout(resolve, 50));
          send({ type: "drained" });
          return;
        case "stop":
          await peer.stop();
          agent.destroy();
          process.exit(0);
      }
    })().catch((error: unknown) => {
      process.stderr.write(`peer ${config.kind}: ${(error as Error).stack ?? String(error)}\n`);
      process.exit(1);
    });
  });
  send({ type: "ready" });
}

main().catch((error: unknown) => {
  process.stderr.write(`peer ${config.kind} failed to start: ${(error as Error).stack ?? String(error)}\n`);
  process.exit(1);
});
