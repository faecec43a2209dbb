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
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(private readonly options: TerminalJobCacheOptions) {
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /** The cached job if it belongs to `orgId` and is fresh; another org's job is a miss, never a hit. */
  get(orgId: string, jobId: string): jobs.Job | undefined {
    const entry = this.entries.get(jobId);
    if (!entry || entry.job.orgId !== orgId) return undefined;
    if (entry.expiresAt <= this.now()) {
      this.entries.delete(jobId);
      return undefined;
    }
    return entry.job;
  }

  /** Keeps `job` if it is terminal. */
  remember(job: jobs.Job): void {
    if (this.options.ttlMs <= 0 || !TERMINAL.has(job.status)) return;
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

  get size(): number {
    return this.entries.size;
  }
}

/** GetJob through the cache: a hit answers at once, a miss asks the jobs service and remembers a finished job. */
export async function getJobCached(cache: TerminalJobCache, orgId: string, jobId: string, fetch: () => Promise<jobs.Job>): Promise<jobs.Job> {
  const cached = cache.get(orgId, jobId);
  if (cached) return cached;
  const job = await fetch();
  cache.remember(job);
  return job;
}
