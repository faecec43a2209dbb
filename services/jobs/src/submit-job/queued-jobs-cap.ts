import { sql, type Kysely } from "kysely";
import { planLimit } from "@renderbus/errors";
import type { Plan } from "@renderbus/plans";
import type { JobsDatabase } from "../db/jobs-database.js";

/** How long a count far from the cap is reused for the org's next submissions on this replica. */
const DEFAULT_CACHE_MS = 1_000;
/** Entries kept before expired ones are swept (one per org that submitted in the last `cacheMs`). */
const SWEEP_ABOVE = 10_000;

interface CountedQueue {
  /** Jobs counted waiting, plus those this replica let through since. */
  waiting: number;
  countedAt: number;
}

/**
 * The plan's cap on jobs waiting for a slot (`Plan.maxQueuedJobs`, SECURITY-AUDIT finding 12): submissions are
 * refused once the org's queue is full, instead of letting one org pile up work for free. Jobs that hold a slot
 * (dispatched, running) do not count: the plan's concurrency already bounds them.
 *
 * The count walks the partial index of waiting jobs, stopping at the cap, so it costs at most `maxQueuedJobs` index
 * entries. An org whose count left it below half its cap skips the count for `cacheMs` while this replica's own
 * submissions stay below that half, so a busy org far from the cap is counted about once a second per replica.
 * Submissions running at the same moment (or on other replicas) may pass the same count, so the cap can be exceeded
 * by what is submitted concurrently; the plan's request rate bounds that.
 */
export class QueuedJobsCap {
  private readonly counted = new Map<string, CountedQueue>();

  constructor(
    private readonly db: Kysely<JobsDatabase>,
    private readonly options: { cacheMs?: number; now?: () => number } = {},
  ) {}

  /**
   * Lets `adding` new jobs of the org join its queue, or refuses them all.
   * @throws AppError PLAN_LIMIT naming the cap when they would make the org's waiting jobs exceed `plan.maxQueuedJobs`.
   */
  async ensureRoom(orgId: string, plan: Plan, adding: number): Promise<void> {
    const now = (this.options.now ?? Date.now)();
    const cacheMs = this.options.cacheMs ?? DEFAULT_CACHE_MS;
    const cap = plan.maxQueuedJobs;
    const cached = this.counted.get(orgId);
    if (cached && now - cached.countedAt < cacheMs && cached.waiting + adding <= cap / 2) {
      cached.waiting += adding;
      return;
    }
    const waiting = await this.countWaiting(orgId, cap);
    if (waiting + adding > cap) {
      this.counted.delete(orgId);
      const what = adding === 1 ? "this job" : `these ${adding} jobs`;
      throw planLimit(
        `The ${plan.name} plan queues at most ${cap} jobs waiting for a slot (maxQueuedJobs); ${waiting} are waiting, no room for ${what}. Submit again once some have started, or cancel some`,
      );
    }
    if (this.counted.size >= SWEEP_ABOVE) this.sweep(now, cacheMs);
    this.counted.set(orgId, { waiting: waiting + adding, countedAt: now });
  }

  /** Waiting jobs of the org, counted up to `cap` at most. */
  private async countWaiting(orgId: string, cap: number): Promise<number> {
    const row = await this.db
      .selectFrom((query) =>
        query.selectFrom("job_views").select(sql<number>`1`.as("one")).where("org_id", "=", orgId).where("status", "=", "waiting").limit(cap).as("waiting"),
      )
      .select(sql<number>`count(*)::int`.as("count"))
      .executeTakeFirst();
    return row?.count ?? 0;
  }

  private sweep(now: number, cacheMs: number): void {
    for (const [orgId, entry] of this.counted) if (now - entry.countedAt >= cacheMs) this.counted.delete(orgId);
  }
}
