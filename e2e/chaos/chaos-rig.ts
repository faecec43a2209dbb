import { randomBytes } from "node:crypto";
import pg from "pg";
import { natsConnectOptions, SERVICES, startSystem, type RunningSystem, type ServiceName } from "@renderbus/testing";
import { createOrg, makeTestVideo, repoRoot, startFileServer, startReceiver } from "../helpers.js";
import { startPrivateNats, startPrivateNatsCluster, startPrivatePostgres, type NatsNode, type PrivateNatsCluster } from "./private-infra.js";

/**
 * A whole Renderbus on private PostgreSQL and NATS, a steady load of jobs (and batches) with webhooks, faults, and
 * the checks that nothing accepted was lost. Used by the CI chaos test (a few faults) and `npm run test:chaos`.
 */

const TERMINAL = ["completed", "failed", "cancelled"];

export interface Fault {
  name: string;
  /** Causes the fault (and undoes it, where it is undone); returns problems it saw itself. */
  inject(rig: ChaosRig): Promise<string[] | void>;
}

export interface FaultOutcome {
  fault: string;
  jobs: number;
  completed: number;
  failed: number;
  deliveries: number;
  batches: number;
  submitErrors: number;
  seconds: number;
  problems: string[];
}

export interface ChaosRig {
  system: RunningSystem;
  nats: NatsNode[];
  /** The cluster's links, when the rig runs a 3-node cluster. */
  cluster: PrivateNatsCluster | undefined;
  postgres: Awaited<ReturnType<typeof startPrivatePostgres>>;
  receiver: Awaited<ReturnType<typeof startReceiver>>;
  /** While true the receiver answers 503 to everything (a receiver outage). */
  setReceiverDown(down: boolean): void;
  /** Runs one fault under load and checks every invariant afterwards. */
  run(fault: Fault, options?: { loadSecondsBefore?: number; loadSecondsAfter?: number }): Promise<FaultOutcome>;
  stop(): Promise<void>;
}

export interface RigOptions {
  /** A 3-node JetStream cluster with stream replicas 3 instead of one server. */
  cluster?: boolean;
  redisUrl: string;
  log?: (line: string) => void;
  /** Webhook retry delays; the default survives a 60 s receiver outage (attempts at 0, 1, 6 and ~76 s). */
  retryScheduleMs?: string;
}

export async function startChaosRig(options: RigOptions): Promise<ChaosRig> {
  const log = options.log ?? (() => undefined);
  const postgres = await startPrivatePostgres();
  const cluster = options.cluster ? await startPrivateNatsCluster() : undefined;
  const nats = cluster ?? (await startPrivateNats());
  const media = await startFileServer(await makeTestVideo());
  let receiverDown = false;
  const receiver = await startReceiver(() => (receiverDown ? 503 : 200));
  const databaseUrl = await postgres.createDatabase(`rb_chaos_${randomBytes(4).toString("hex")}`);
  const system = await startSystem({
    repoRoot,
    databaseUrl,
    natsUrl: nats.url,
    redisUrl: options.redisUrl,
    namespace: "",
    env: {
      MODE: "test",
      LOG_LEVEL: "warn",
      NATS_REPLICAS: options.cluster ? "3" : "1",
      WEBHOOK_RETRY_SCHEDULE_MS: options.retryScheduleMs ?? "1000,5000,70000",
      WEBHOOK_TIMEOUT_MS: "3000",
      // A killed worker's job goes to the restarted one after this (the default is a minute).
      WORKER_ACK_WAIT_MS: "10000",
      // A dispatch gone from the stream without a start is sent again after this (the default is 2 minutes).
      DISPATCH_RESEND_AFTER_MS: "20000",
      JOBS_WATCHDOG_INTERVAL_MS: "5000",
      PLANS_JSON: JSON.stringify({ scale: { requestsPerMinute: 1_000_000, concurrency: 25, monthlyCredits: 10_000_000 } }),
      // All load comes from 127.0.0.1.
      IP_REQUESTS_PER_MINUTE: "1000000",
    },
    onLine: (service, line) => {
      if (/"level":(50|60)|error/i.test(line)) log(`[${service}] ${line.slice(0, 300)}`);
    },
  });
  const org = await createOrg(system.env, "scale", "Chaos");
  const headers = { authorization: `Bearer ${org.key}`, "content-type": "application/json" };
  const patched = await fetch(`${system.gatewayUrl}/orgs/${org.orgId}`, { method: "PATCH", headers, body: JSON.stringify({ webhookUrl: receiver.url, webhookSecret: "whsec_chaos_secret" }) });
  if (patched.status !== 200) throw new Error(`PATCH /orgs failed: ${patched.status} ${await patched.text()}`);
  const db = new pg.Pool({ connectionString: databaseUrl, max: 3 });
  db.on("error", () => undefined);

  /** Submits jobs (every 8th a batch of 3, every 5th a real ffprobe job) at a steady rate until stopped. */
  const startLoad = (ratePerSecond = 3) => {
    let running = true;
    let submitted = 0;
    let errors = 0;
    const loop = (async () => {
      for (let index = 0; running; index += 1) {
        const body =
          index % 8 === 7
            ? { path: "/batches", payload: { jobs: [1, 2, 3].map((n) => ({ type: "qr.generate", params: { content: `batch ${index}.${n}` } })) } }
            : index % 5 === 4
              ? { path: "/jobs", payload: { type: "extract.metadata", inputs: { source: media.url("clip.mp4") } } }
              : { path: "/jobs", payload: { type: "qr.generate", params: { content: `job ${index}` } } };
        void fetch(`${system.gatewayUrl}${body.path}`, { method: "POST", headers: { ...headers, "idempotency-key": `chaos-${randomBytes(8).toString("hex")}` }, body: JSON.stringify(body.payload), signal: AbortSignal.timeout(15_000) })
          .then(async (response) => {
            await response.arrayBuffer();
            if (response.status === 201) submitted += 1;
            else errors += 1;
          })
          .catch(() => (errors += 1));
        await new Promise((done) => setTimeout(done, 1000 / ratePerSecond));
      }
    })();
    return {
      stop: async () => {
        running = false;
        await loop;
        return { submitted, errors };
      },
    };
  };

  const query = async <T extends pg.QueryResultRow>(text: string, values: unknown[] = []): Promise<T[]> => (await db.query<T>(text, values)).rows;

  /** Polls until `probe` is true, or gives up after `timeoutMs` (the checks then report what is still wrong). */
  const settle = async (probe: () => Promise<boolean>, timeoutMs: number) => {
    const deadline = Date.now() + timeoutMs;
    while (Date.now() < deadline) {
      try {
        if (await probe()) return true;
      } catch {
        // a dependency is still coming back
      }
      await new Promise((done) => setTimeout(done, 1000));
    }
    return false;
  };

  /**
   * Where the consumers of a stream stand, for a loss report: each one's position and backlog, and for jobs stuck
   * before starting (`jobIds`, with their types), whether their work message is still in JOBS_DISPATCH.
   */
  const consumerReport = async (streamName = "JOBS_EVENTS", stuckJobs: { id: string; type: string }[] = []): Promise<string> => {
    const { connect } = await import("@nats-io/transport-node");
    const { jetstreamManager } = await import("@nats-io/jetstream");
    const connection = await connect(natsConnectOptions(nats.url));
    try {
      const manager = await jetstreamManager(connection);
      const stream = await manager.streams.info(streamName);
      const lines = [`${streamName} messages ${stream.state.messages}, first seq ${stream.state.first_seq}, last seq ${stream.state.last_seq}, leader ${stream.cluster?.leader ?? "-"}`];
      for (const job of stuckJobs.slice(0, 5)) {
        const message = await manager.streams.getMessage(streamName, { last_by_subj: `jobs.dispatch.${job.type}.${job.id}` }).catch(() => null);
        lines.push(`${job.id}: work message ${message ? `at seq ${message.seq}` : "not in the stream"}`);
      }
      for await (const consumer of manager.consumers.list(streamName)) {
        lines.push(`${consumer.name}: delivered ${consumer.delivered.stream_seq}, ack floor ${consumer.ack_floor.stream_seq}, pending ${consumer.num_pending}, ack pending ${consumer.num_ack_pending}, redelivered ${consumer.num_redelivered}, leader ${consumer.cluster?.leader ?? "-"}`);
      }
      return ` [${lines.join("; ")}]`;
    } catch (error) {
      return ` [consumer report failed: ${String(error)}]`;
    } finally {
      await connection.close();
    }
  };

  /** The invariants of the issue: nothing accepted is lost, duplicated or left half-done, and money adds up. */
  const check = async (): Promise<Omit<FaultOutcome, "fault" | "submitErrors" | "seconds">> => {
    const problems: string[] = [];
    await settle(async () => (await query(`select 1 from jobs.job_views where org_id = $1 and status <> all($2) limit 1`, [org.orgId, TERMINAL])).length === 0, 180_000);
    await settle(async () => (await query(`select 1 from dispatcher.deliveries where org_id = $1 and status = 'pending' limit 1`, [org.orgId])).length === 0, 180_000);
    // Batch completion is counted after the last job event is processed; give the last one a moment.
    await settle(async () => (await query(`select 1 from jobs.batch_views b where b.org_id = $1 and not exists (select 1 from dispatcher.deliveries d where d.batch_id = b.id and d.event = 'batch.completed') limit 1`, [org.orgId])).length === 0, 60_000);

    // Charges follow job events through the auth service's own consumer.
    await settle(async () => Number((await query<{ reserved: string }>(`select reserved from auth.credit_balances where org_id = $1`, [org.orgId]))[0]?.reserved ?? 1) === 0, 120_000);

    const jobs = await query<{ id: string; status: string }>(`select id, status from jobs.job_views where org_id = $1`, [org.orgId]);
    const stuck = jobs.filter((job) => !TERMINAL.includes(job.status));
    if (stuck.length > 0) {
      const types = await query<{ id: string; type: string }>(`select id, type from jobs.job_views where id = any($1)`, [stuck.map((job) => job.id)]);
      problems.push(`${stuck.length} accepted jobs not terminal (e.g. ${stuck[0]!.id} ${stuck[0]!.status})${await consumerReport("JOBS_DISPATCH", types)}`);
    }

    const eventCounts = await query<{ stream_id: string; queued: number; terminal: number }>(
      `select stream_id, count(*) filter (where type = 'JobQueued')::int as queued,
              count(*) filter (where type in ('JobCompleted', 'JobFailed', 'JobCancelled'))::int as terminal
         from jobs.events where stream_id in (select id from jobs.job_views where org_id = $1) group by stream_id`,
      [org.orgId],
    );
    const wrongEvents = eventCounts.filter((row) => row.queued !== 1 || row.terminal !== 1);
    if (wrongEvents.length > 0) problems.push(`${wrongEvents.length} jobs without exactly one JobQueued and one terminal event (e.g. ${JSON.stringify(wrongEvents[0])})`);
    if (eventCounts.length !== jobs.length) problems.push(`${jobs.length - eventCounts.length} jobs have no event stream`);

    // Every webhook-worthy job event has its delivery, and every delivery ended succeeded. After a failover the
    // dispatcher's consumer may still be catching up (its pull expires, a new leader is elected): late is not lost,
    // so wait for stragglers before calling them lost, and say how many there were.
    const undelivered = () =>
      query<{ event_id: string; type: string }>(
        `select e.event_id, e.type from jobs.events e
           where e.stream_id in (select id from jobs.job_views where org_id = $1)
             and e.type in ('JobStarted', 'JobCompleted', 'JobFailed')
             and not exists (select 1 from dispatcher.deliveries d where d.source_event_id = e.event_id)`,
        [org.orgId],
      );
    const late = (await undelivered()).length;
    const lateSince = Date.now();
    if (late > 0) await settle(async () => (await undelivered()).length === 0, 120_000);
    const missing = await undelivered();
    if (late > 0) log(`${late} job events had no delivery yet at the check; ${missing.length} still after ${Math.round((Date.now() - lateSince) / 1000)} s`);
    if (missing.length > 0) problems.push(`${missing.length} job events without a delivery (e.g. ${missing[0]!.type} ${missing[0]!.event_id})${await consumerReport()}`);
    // Deliveries of late events (and the batch completions they finish) were created after the first wait for
    // pending deliveries: give them the same time to be sent before calling one lost.
    const pendingNow = async () => (await query<{ count: number }>(`select count(*)::int as count from dispatcher.deliveries where org_id = $1 and status = 'pending'`, [org.orgId]))[0]!.count;
    const latePending = await pendingNow();
    if (latePending > 0) {
      await settle(async () => (await pendingNow()) === 0, 180_000);
      log(`${latePending} deliveries of late events were still pending at the check; ${await pendingNow()} after the wait`);
    }
    const deliveries = await query<{ id: string; status: string; event: string; batch_id: string | null; last_error: string | null }>(`select id, status, event, batch_id, last_error from dispatcher.deliveries where org_id = $1`, [org.orgId]);
    const unsuccessful = deliveries.filter((delivery) => delivery.status !== "succeeded");
    if (unsuccessful.length > 0) {
      // Where the first one stands in the dispatcher's queue: due when, leased until when, by whom.
      const [queued] = await query(`select created_at, next_attempt_at, lease_until, lease_token is not null as leased, attempts, endpoint_id from dispatcher.deliveries where id = $1`, [unsuccessful[0]!.id]);
      problems.push(`${unsuccessful.length} deliveries not succeeded (e.g. ${unsuccessful[0]!.event} ${unsuccessful[0]!.status}: ${unsuccessful[0]!.last_error}; ${JSON.stringify(queued)} at ${Date.now()})`);
    }
    const received = new Set(receiver.received.map((hook) => String(hook.headers["x-renderbus-delivery"])));
    const neverReceived = deliveries.filter((delivery) => delivery.status === "succeeded" && !received.has(delivery.id));
    if (neverReceived.length > 0) problems.push(`${neverReceived.length} succeeded deliveries the receiver never got`);

    const batches = await query<{ id: string }>(`select id from jobs.batch_views where org_id = $1`, [org.orgId]);
    const completions = new Map<string, number>();
    for (const delivery of deliveries) if (delivery.event === "batch.completed") completions.set(delivery.batch_id!, (completions.get(delivery.batch_id!) ?? 0) + 1);
    const wrongBatches = batches.filter((batch) => completions.get(batch.id) !== 1);
    if (wrongBatches.length > 0) problems.push(`${wrongBatches.length} batches without exactly one batch.completed (e.g. ${wrongBatches[0]!.id}: ${completions.get(wrongBatches[0]!.id) ?? 0})`);

    // The ledger explains the balance (credit-ledger.ts), nothing stays reserved, and only completed jobs paid.
    const [sums] = await query<{ grant: string; reserve: string; capture: string; release: string }>(
      `select coalesce(sum(credits) filter (where kind = 'grant'), 0) as grant, coalesce(sum(credits) filter (where kind = 'reserve'), 0) as reserve,
              coalesce(sum(credits) filter (where kind = 'capture'), 0) as capture, coalesce(sum(credits) filter (where kind = 'release'), 0) as release
         from auth.credit_ledger where org_id = $1`,
      [org.orgId],
    );
    const [balance] = await query<{ available: string; reserved: string }>(`select available, reserved from auth.credit_balances where org_id = $1`, [org.orgId]);
    const [grant, reserve, capture, release] = [sums!.grant, sums!.reserve, sums!.capture, sums!.release].map(Number) as [number, number, number, number];
    if (Number(balance!.available) !== grant - reserve + release) problems.push(`available ${balance!.available} != grants ${grant} - reserves ${reserve} + releases ${release}`);
    if (Number(balance!.reserved) !== reserve - capture - release) problems.push(`reserved ${balance!.reserved} != reserves - captures - releases (${reserve - capture - release})`);
    if (Number(balance!.reserved) !== 0) problems.push(`${balance!.reserved} credits still reserved with every job terminal`);
    const captures = await query<{ job_id: string; count: number }>(`select job_id, count(*)::int as count from auth.credit_ledger where org_id = $1 and kind = 'capture' group by job_id`, [org.orgId]);
    const captured = new Map(captures.map((row) => [row.job_id, row.count]));
    const unpaid = jobs.filter((job) => job.status === "completed" && captured.get(job.id) !== 1);
    if (unpaid.length > 0) problems.push(`${unpaid.length} completed jobs without exactly one capture`);
    const overcharged = jobs.filter((job) => job.status !== "completed" && captured.has(job.id));
    if (overcharged.length > 0) problems.push(`${overcharged.length} failed/cancelled jobs charged`);

    return {
      jobs: jobs.length,
      completed: jobs.filter((job) => job.status === "completed").length,
      failed: jobs.filter((job) => job.status === "failed").length,
      deliveries: deliveries.length,
      batches: batches.length,
      problems,
    };
  };

  const rig: ChaosRig = {
    system,
    nats: nats.nodes,
    cluster,
    postgres,
    receiver,
    setReceiverDown: (down) => (receiverDown = down),
    async run(fault, { loadSecondsBefore = 5, loadSecondsAfter = 10 } = {}) {
      const started = Date.now();
      const load = startLoad();
      await new Promise((done) => setTimeout(done, loadSecondsBefore * 1000));
      log(`fault: ${fault.name}`);
      const seen = (await fault.inject(rig)) ?? [];
      await new Promise((done) => setTimeout(done, loadSecondsAfter * 1000));
      const { errors } = await load.stop();
      const outcome = await check();
      return { fault: fault.name, submitErrors: errors, seconds: Math.round((Date.now() - started) / 1000), ...outcome, problems: [...seen, ...outcome.problems] };
    },
    async stop() {
      await system.stop().catch(() => undefined);
      await db.end().catch(() => undefined);
      await Promise.all([receiver.close(), media.close()]);
      await nats.stop();
      await postgres.stop();
    },
  };
  return rig;
}

/** kill -9 a service, keep the load running a few seconds without it, then start it again. */
export const killService = (service: ServiceName, downSeconds = 3): Fault => ({
  name: `kill -9 ${service}`,
  async inject(rig) {
    await rig.system.kill(service);
    await new Promise((done) => setTimeout(done, downSeconds * 1000));
    await rig.system.start(service);
  },
});

export const restartNats: Fault = {
  name: "restart NATS",
  async inject(rig) {
    await rig.nats[0]!.stop();
    await new Promise((done) => setTimeout(done, 2000));
    await rig.nats[0]!.start();
    await rig.nats[0]!.waitForClients();
  },
};

export const restartPostgres: Fault = {
  name: "restart PostgreSQL",
  async inject(rig) {
    await rig.postgres.restart();
  },
};

export const pauseReceiver = (seconds = 60): Fault => ({
  name: `receiver down ${seconds} s`,
  async inject(rig) {
    rig.setReceiverDown(true);
    await new Promise((done) => setTimeout(done, seconds * 1000));
    rig.setReceiverDown(false);
  },
});

/** kill -9 one node of the 3-node cluster (not the one the services were given) and leave it down. */
export const killClusterNode: Fault = {
  name: "kill -9 one of 3 NATS nodes (R3 streams)",
  async inject(rig) {
    // Losing a node loses nothing only if every stream has 3 replicas.
    const { connect } = await import("@nats-io/transport-node");
    const { jetstreamManager } = await import("@nats-io/jetstream");
    const connection = await connect(natsConnectOptions(rig.nats[0]!.url));
    const problems: string[] = [];
    try {
      for await (const stream of (await jetstreamManager(connection)).streams.list()) {
        if (stream.config.num_replicas < 3) problems.push(`stream ${stream.config.name} has ${stream.config.num_replicas} replica(s), not 3`);
      }
    } finally {
      await connection.close();
    }
    await rig.nats[2]!.stop("SIGKILL");
    return problems;
  },
};

/** Names the node leading a stream's replicas (the node whose loss forces an election). */
async function streamLeader(rig: ChaosRig, stream: string): Promise<NatsNode> {
  const { connect } = await import("@nats-io/transport-node");
  const { jetstreamManager } = await import("@nats-io/jetstream");
  const connection = await connect(natsConnectOptions(rig.nats[0]!.url));
  try {
    const leader = (await (await jetstreamManager(connection)).streams.info(stream)).cluster?.leader;
    const node = rig.nats.find((candidate) => leader === `rb-chaos-${rig.nats.indexOf(candidate)}`);
    if (!node) throw new Error(`stream ${stream} has no leader among the rig's nodes (${leader ?? "none"})`);
    return node;
  } finally {
    await connection.close();
  }
}

/**
 * Cuts the routes of the node leading the job events stream for `seconds` (the node and its clients stay up: a
 * network partition, not a crash), then heals them. The other two elect a new leader meanwhile; the old one must
 * rejoin without the cluster losing or resending anything it acknowledged.
 */
export const partitionClusterNode = (seconds = 30): Fault => ({
  name: `partition the job events leader of 3 NATS nodes for ${seconds} s`,
  async inject(rig) {
    if (!rig.cluster) return ["partition needs the 3-node cluster"];
    const leader = await streamLeader(rig, "JOBS_EVENTS");
    rig.cluster.partition(leader);
    await new Promise((done) => setTimeout(done, seconds * 1000));
    rig.cluster.heal();
  },
});

export const EVERY_SERVICE = ["gateway", "auth", "jobs", "worker", "webhook-dispatcher"] as const satisfies readonly (typeof SERVICES)[number][];

/** The table of faults survived, for the console. */
export function faultTable(outcomes: FaultOutcome[]): string {
  const rows = [["fault", "result", "jobs", "completed", "failed", "deliveries", "batches", "submit errors", "s"]];
  for (const outcome of outcomes) {
    rows.push([outcome.fault, outcome.problems.length === 0 ? "survived" : `LOST: ${outcome.problems.join("; ")}`, ...[outcome.jobs, outcome.completed, outcome.failed, outcome.deliveries, outcome.batches, outcome.submitErrors, outcome.seconds].map(String)]);
  }
  const widths = rows[0]!.map((_, column) => Math.min(80, Math.max(...rows.map((row) => row[column]!.length))));
  return rows.map((row) => row.map((cell, column) => cell.padEnd(widths[column]!)).join(" | ")).join("\n");
}
