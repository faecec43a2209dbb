import type { Bus } from "@renderbus/bus";
import type { BenchEnvironment } from "./environment.js";
import type { InputServer } from "./file-server.js";
import type { BenchOrg } from "./orgs.js";
import type { WebhookReceiver } from "./receiver.js";

/** Sizes of one run: `--quick` shrinks every benchmark to one round of a few seconds (about two minutes in all): it checks the machinery and the report, not the figures. */
export interface BenchSizes {
  quick: boolean;
  /** Seconds of each round of a fixed-duration load (autocannon, bare append). */
  httpSeconds: number;
  /** Rounds a throughput benchmark and its baseline take turns for (see `interleaved`). */
  rounds: number;
  /** Connections for the gateway and POST /jobs loads. */
  connections: number;
  /** Jobs submitted one at a time for the queued -> running latency. */
  latencyJobs: number;
  /** Synthetic events for the deliveries/s measurement. */
  throughputEvents: number;
  /** Seconds of synthetic events at `eventsPerSecond` for the event -> attempt latency. */
  latencySeconds: number;
  /**
   * Rounds of the benchmarks with a p99 target (authenticated reads; event -> attempt latency, per replica count).
   * More than `rounds`: a p99 is set by the few pauses (garbage collection, another process taking the core) that
   * land in a round, and with 3 rounds p99s of the same code came out 20-30% apart between runs.
   */
  latencyRounds: number;
  eventsPerSecond: number;
  batchJobs: number;
}

export function benchSizes(quick: boolean): BenchSizes {
  return quick
    ? { quick, httpSeconds: 1, rounds: 1, connections: 50, latencyJobs: 10, throughputEvents: 500, latencySeconds: 1, latencyRounds: 1, eventsPerSecond: 500, batchJobs: 20 }
    : { quick, httpSeconds: 4, rounds: 3, connections: 50, latencyJobs: 60, throughputEvents: 5000, latencySeconds: 10, latencyRounds: 6, eventsPerSecond: 500, batchJobs: 1000 };
}

/** Everything a benchmark needs: the running system, the orgs made for it, local input and webhook servers. */
export interface BenchContext {
  sizes: BenchSizes;
  env: BenchEnvironment;
  gatewayUrl: string;
  /** Connected to the run's NATS namespace. */
  bus: Bus;
  receiver: WebhookReceiver;
  inputs: InputServer;
  orgs: {
    /** plan scale, no webhook: reads and queued -> running. */
    main: BenchOrg;
    /** plan starter, webhook to the receiver: synthetic events for the dispatcher, spread over 32 orgs. */
    webhook: BenchOrg[];
    /**
     * The 32 of `webhook` and 32 more: the capped dispatchers' load. Throttled replicas hold each attempt longer, and
     * the per-org in-flight cap (8, across replicas) over exactly 32 orgs held four of them below their 4 x 64 slots.
     */
    webhookSpread: BenchOrg[];
    /** plan scale, webhook to the receiver: the end-to-end batch. */
    batch: BenchOrg;
    /** plan pro (concurrency 1 in the bench plans): POST /jobs acceptance, whose jobs wait. */
    accept: BenchOrg;
  };
  log(line: string): void;
  /** With `--profile`: extra replicas started by benchmarks run under `node --cpu-prof` writing here. */
  profileDir?: string;
  /** `--pg-statements`: the run's PostgreSQL has pg_stat_statements loaded (bench/pg-statements.ts). */
  pgStatements?: boolean;
}
