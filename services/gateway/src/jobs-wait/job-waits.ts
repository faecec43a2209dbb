import type { FastifyInstance } from "fastify";
import type { jobs } from "@renderbus/contracts";
import { TERMINAL_JOB_STATUSES } from "@renderbus/job-types";
import type { AuthContext } from "@renderbus/rpc";
import type { GatewayDeps } from "../deps.js";

const terminal: ReadonlySet<string> = new Set(TERMINAL_JOB_STATUSES);
/** Whether a job's status (a string on the wire) is one it never leaves. */
export const isTerminalStatus = (status: string): boolean => terminal.has(status);

/**
 * A status change can be missed between the first read and the subscription, or during a NATS reconnect: a slow
 * re-read closes that gap (as the SSE stream does) without making waits depend on polling.
 */
export const RESYNC_MS = 5_000;
/** Re-reads of one wait are at least this far apart, so a busy batch (an event per job) costs few reads. */
const MIN_READ_GAP_MS = 250;

type WaitDeps = Pick<GatewayDeps, "jobs" | "jobEvents" | "finishedJobs">;

/**
 * Waits for jobs and batches to finish, for `wait_for_job` (`GET /jobs/{id}/wait`) and MCP tasks: woken by the
 * job events this replica already receives ({@link JobEventHub}), so a waiting client costs one listener and a read
 * per status change, not a poll. Every wait ends when the gateway closes, so shutdown never waits on one.
 */
export class JobWaits {
  private readonly closing = new AbortController();

  constructor(
    private readonly deps: WaitDeps,
    private readonly options: { resyncMs?: number } = {},
  ) {}

  /** Aborted when the gateway starts closing. */
  get closed(): AbortSignal {
    return this.closing.signal;
  }

  close(): void {
    this.closing.abort();
  }

  /** The job once terminal, or as it is when `timeoutMs` has passed, `signal` aborts (the client left) or the gateway closes. */
  waitForJob(auth: AuthContext, jobId: string, timeoutMs: number, signal?: AbortSignal): Promise<jobs.Job> {
    return this.waitUntil(
      () => this.deps.finishedJobs.read(auth.orgId, jobId, () => this.deps.jobs.getJob({ jobId }, { auth })),
      (job) => isTerminalStatus(job.status),
      (wake) => this.deps.jobEvents.watch(jobId, wake),
      timeoutMs,
      signal,
    );
  }

  /** The batch once every job of it is terminal (status completed), or as it is when the wait ends otherwise. */
  waitForBatch(auth: AuthContext, batchId: string, timeoutMs: number, signal?: AbortSignal): Promise<jobs.Batch> {
    return this.waitUntil(
      () => this.deps.jobs.getBatch({ batchId }, { auth }),
      (batch) => batch.status === "completed",
      (wake, first) => {
        const stops = first.jobIds.map((jobId) => this.deps.jobEvents.watch(jobId, wake));
        return () => stops.forEach((stop) => stop());
      },
      timeoutMs,
      signal,
    );
  }

  private async waitUntil<T>(
    read: () => Promise<T>,
    isDone: (value: T) => boolean,
    watch: (wake: () => void, first: T) => () => void,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<T> {
    let latest = await read();
    // Listened to one by one: AbortSignal.any() ties every wait to the long-lived closing signal until it aborts.
    const signals = signal ? [signal, this.closing.signal] : [this.closing.signal];
    const stopped = (): boolean => signals.some((each) => each.aborted);
    if (isDone(latest) || timeoutMs <= 0 || stopped()) return latest;
    const deadline = Date.now() + timeoutMs;
    let woken = false;
    let resume: (() => void) | undefined;
    const wake = () => {
      woken = true;
      resume?.();
    };
    const unwatch = watch(wake, latest);
    for (const each of signals) each.addEventListener("abort", wake, { once: true });
    try {
      // Re-read once after subscribing: an event may have been missed between the first read and the subscription.
      let lastReadAt = Date.now();
      latest = await read();
      while (!isDone(latest)) {
        const remaining = deadline - Date.now();
        if (remaining <= 0 || stopped()) return latest;
        await new Promise<void>((resolve) => {
          const timer = setTimeout(done, Math.min(remaining, this.options.resyncMs ?? RESYNC_MS));
          function done() {
            clearTimeout(timer);
            resume = undefined;
            resolve();
          }
          resume = done;
          if (woken) done();
        });
        woken = false;
        if (stopped() || Date.now() >= deadline) return latest;
        const sinceRead = Date.now() - lastReadAt;
        if (sinceRead < MIN_READ_GAP_MS) await new Promise((resolve) => setTimeout(resolve, MIN_READ_GAP_MS - sinceRead));
        lastReadAt = Date.now();
        latest = await read();
      }
      return latest;
    } finally {
      for (const each of signals) each.removeEventListener("abort", wake);
      unwatch();
    }
  }
}

const registries = new WeakMap<object, JobWaits>();

/**
 * The waits of the gateway built with `deps`. {@link registerJobWaits} ends them before the server closes; one made
 * here on first use (an app that skipped it) simply lives as long as `deps`.
 */
export function jobWaitsOf(deps: WaitDeps): JobWaits {
  let waits = registries.get(deps);
  if (!waits) {
    waits = new JobWaits(deps);
    registries.set(deps, waits);
  }
  return waits;
}

/** Ends every wait when the app starts closing: a client waiting up to 60 s would otherwise hold `server.close()`. */
export function registerJobWaits(app: FastifyInstance, deps: WaitDeps): void {
  app.addHook("preClose", async () => jobWaitsOf(deps).close());
}
