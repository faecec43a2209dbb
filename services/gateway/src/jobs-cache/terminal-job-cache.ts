import type { jobs } from "@renderbus/contracts";

/** Statuses a job never leaves: its view can only change afterwards through its webhook deliveries. */
const TERMINAL = new Set(["completed", "failed", "cancelled"]);

export interface TerminalJobCacheOptions {
  /** How long an entry is served; bounds how stale a job's `webhookDeliveries` may be. 0 disables the cache. */
  ttlMs: number;
  /** Entries kept at most; the oldest inserted are dropped first. */
  maxEntries?: number;
  now?: () => number;
}

interface Entry {
  job: jobs.Job;
  expiresAt: number;
}

/**
 * Finished jobs as the jobs service last returned them, so polling a finished job (what clients and agents do most
 * after submitting) is answered by the gateway without a gRPC call and two queries. Only terminal jobs are kept: a
 * job's status is never served stale. What can still change is its delivery log; entries are dropped when an update
 * of a delivery of the job arrives (`webhooks.events.deliveries.updated`, or the older per-delivery
 * `webhooks.events.delivery.updated`) and expire after `ttlMs` in any case (the jobs service
 * projects deliveries asynchronously too, so they are eventually consistent either way).
 */
export class TerminalJobCache {
  private readonly entries = new Map<string, Entry>();
  /** Jobs whose delivery log just moved, until when they are not cached again (see `forget`). */
  private readonly changing = new Map<string, number>();
  /** Reads of finished jobs whose entry ran out, shared by the pollers that ask meanwhile (see `read`). */
  private readonly refreshing = new Map<string, Promise<jobs.Job>>();
  /** Nothing is cached before this time (see `forgetAll`). */
  private cachingResumesAt = 0;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(private readonly options: TerminalJobCacheOptions) {
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /** The cached job if it belongs to `orgId` and is fresh; another org's job is a miss, never a hit. */
  get(orgId: string, jobId: string): jobs.Job | undefined {
    const entry = this.entryOf(orgId, jobId);
    return entry && entry.expiresAt > this.now() ? entry.job : undefined;
  }

  /**
   * The entry of `orgId`'s job, fresh or not: one that ran out stays until it is read again (see `read`) or pushed out
   * by newer ones (`maxEntries`).
   */
  private entryOf(orgId: string, jobId: string): Entry | undefined {
    const entry = this.entries.get(jobId);
    return entry?.job.orgId === orgId ? entry : undefined;
  }

  /**
   * GetJob through the cache: a fresh entry answers at once, a miss asks `fetch` and remembers a finished job. When a
   * finished job's entry has run out, every poller asking while it is read again waits for that one read instead of
   * each calling the jobs service (a job many clients poll would otherwise cost a burst of calls every TTL). Only
   * such a refresh is shared: the job's status cannot change any more, and a delivery update (`forget`) ends the
   * sharing, so no answer is older than the request. Any other miss (a job never seen finished) reads on its own,
   * so a read after a write always sees it.
   */
  async read(orgId: string, jobId: string, fetch: () => Promise<jobs.Job>): Promise<jobs.Job> {
    const entry = this.entryOf(orgId, jobId);
    if (!entry) return this.fetchAndRemember(fetch);
    if (entry.expiresAt > this.now()) return entry.job;
    const shared = this.refreshing.get(jobId);
    if (shared) return shared;
    const refresh = this.fetchAndRemember(fetch).finally(() => {
      if (this.refreshing.get(jobId) === refresh) this.refreshing.delete(jobId);
    });
    this.refreshing.set(jobId, refresh);
    return refresh;
  }

  private async fetchAndRemember(fetch: () => Promise<jobs.Job>): Promise<jobs.Job> {
    const job = await fetch();
    this.remember(job);
    return job;
  }

  /** Keeps `job` if it is terminal. */
  remember(job: jobs.Job): void {
    if (this.options.ttlMs <= 0 || !TERMINAL.has(job.status) || this.cachingResumesAt > this.now()) return;
    const quietUntil = this.changing.get(job.id);
    if (quietUntil !== undefined) {
      if (quietUntil > this.now()) return;
      this.changing.delete(job.id);
    }
    this.entries.delete(job.id);
    if (this.entries.size >= this.maxEntries) {
      const oldest = this.entries.keys().next();
      if (!oldest.done) this.entries.delete(oldest.value);
    }
    this.entries.set(job.id, { job, expiresAt: this.now() + this.options.ttlMs });
  }

  /**
   * A delivery of the job moved. The event can reach this replica before the jobs service has projected it, so a read
   * right now may still return the old log: the job is also left uncached for one TTL, instead of caching that read.
   */
  forget(jobId: string | undefined): void {
    if (!jobId) return;
    this.entries.delete(jobId);
    if (this.options.ttlMs <= 0) return;
    if (this.changing.size >= this.maxEntries) this.changing.clear(); // bound memory; worst case is a few misses
    this.changing.set(jobId, this.now() + this.options.ttlMs);
  }

  /**
   * Delivery updates were missed (this replica's NATS connection was down: a core subscription does not replay what
   * was published meanwhile). Any entry may hold an old log, and the jobs service may not have projected the missed
   * updates yet, so nothing is cached again for one TTL either.
   */
  forgetAll(): void {
    this.entries.clear();
    this.changing.clear();
    if (this.options.ttlMs > 0) this.cachingResumesAt = this.now() + this.options.ttlMs;
  }

  get size(): number {
    return this.entries.size;
  }
}
