import type { FastifyInstance } from "fastify";
import { randomUUID } from "node:crypto";
import type { jobs } from "@renderbus/contracts";
import { TERMINAL_JOB_STATUSES } from "@renderbus/job-types";
import type { AuthContext } from "@renderbus/rpc";
import type { GatewayDeps } from "../deps.js";
import { OrgStreamSlots } from "../sse/org-stream-slots.js";

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

/** The longest any wait is held (MCP `tasks/result`); `GET /jobs/{id}/wait` holds at most 60 s. */
export const MAX_HELD_WAIT_MS = 10 * 60_000;

type WaitDeps = Pick<GatewayDeps, "jobs" | "jobEvents" | "finishedJobs"> & Partial<Pick<GatewayDeps, "redis" | "config">>;

/** Leases of held waits per org (Redis, shared by replicas); a replica that dies frees its leases when they expire. */
interface WaitSlots {
  claim(orgId: string, waitId: string): Promise<boolean>;
  release(orgId: string, waitId: string): Promise<void>;
}

/**
 * Waits for jobs and batches to finish, for `wait_for_job` (`GET /jobs/{id}/wait`) and MCP tasks: woken by the
 * job events this replica already receives ({@link JobEventHub}), so a waiting client costs one listener and a read
 * per status change, not a poll. Every wait ends when the gateway closes, so shutdown never waits on one.
 */
export class JobWaits {
  private readonly closing = new AbortController();

  /**
   * @param options.slots caps the waits each org holds at once (HELD_WAITS_PER_ORG): one past it is answered at once
   * with the job or batch as it is, which the contract allows (a client calls again while it is not finished); a
   * held wait costs a listener per job and a read every few seconds, and the request budget alone would let an org
   * hold a thousand of them for 10 minutes each.
   */
  constructor(
    private readonly deps: WaitDeps,
    private readonly options: { resyncMs?: number; slots?: WaitSlots } = {},
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
      auth.orgId,
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
      auth.orgId,
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
    orgId: string,
    read: () => Promise<T>,
    isDone: (value: T) => boolean,
    watch: (wake: () => void, first: T) => () => void,
    timeoutMs: number,
    signal: AbortSignal | undefined,
  ): Promise<T> {
    const latest = await read();
    // Listened to one by one: AbortSignal.any() ties every wait to the long-lived closing signal until it aborts.
    const signals = signal ? [signal, this.closing.signal] : [this.closing.signal];
    const stopped = (): boolean => signals.some((each) => each.aborted);
    if (isDone(latest) || timeoutMs <= 0 || stopped()) return latest;
    const waitId = randomUUID();
    if (this.options.slots && !(await this.options.slots.claim(orgId, waitId))) return latest;
    try {
      return await this.held(read, isDone, watch, latest, timeoutMs, signals);
    } finally {
      // Not awaited: the answer does not wait on Redis (nor shutdown on a closed connection); a lost release runs out
      // with its lease.
      this.options.slots?.release(orgId, waitId).catch(() => undefined);
    }
  }

  private async held<T>(
    read: () => Promise<T>,
    isDone: (value: T) => boolean,
    watch: (wake: () => void, first: T) => () => void,
    first: T,
    timeoutMs: number,
    signals: AbortSignal[],
  ): Promise<T> {
    let latest = first;
    const stopped = (): boolean => signals.some((each) => each.aborted);
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
    const { redis, config } = deps;
    // A lease outlives the longest wait, so only a replica that died leaves one behind, and not for long.
    const slots = redis && config ? new OrgStreamSlots(redis, { maxPerOrg: config.HELD_WAITS_PER_ORG, leaseMs: MAX_HELD_WAIT_MS + 60_000, prefix: "rb:waits" }) : undefined;
    waits = new JobWaits(deps, { slots });
    registries.set(deps, waits);
  }
  return waits;
}

/** Ends every wait when the app starts closing: a client waiting up to 60 s would otherwise hold `server.close()`. */
export function registerJobWaits(app: FastifyInstance, deps: WaitDeps): void {
  app.addHook("preClose", async () => jobWaitsOf(deps).close());
}
