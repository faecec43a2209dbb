import { sql, type Kysely } from "kysely";
import { planOf, type Plan, type PlanName } from "@renderbus/plans";
import { withTraceHeaders } from "@renderbus/telemetry";
import type { JobsDatabase } from "../db/jobs-database.js";
import { decide } from "../job/decide.js";
import { commitJobEvents, countActiveJobs, loadJob } from "../job/job-store.js";

export interface PassOutcome {
  dispatched: number;
  /** Every slot is taken and jobs may still be waiting: only a job leaving its slot can change that. */
  full: boolean;
}

/**
 * One scheduling pass for one org: dispatches its oldest waiting jobs while the jobs holding a slot (dispatched or
 * running) stay below the org's concurrency limit: its current plan's once the auth service has announced a plan
 * change (org_plans), else the one copied into each job at submission. Runs under a per-org transaction advisory
 * lock, so passes on several replicas never count the same free slot twice.
 */
export async function dispatchWaitingJobs(db: Kysely<JobsDatabase>, orgId: string, plans?: Record<PlanName, Plan>): Promise<PassOutcome> {
  return db.transaction().execute(async (trx) => {
    await sql`select pg_advisory_xact_lock(hashtext(${`jobs.schedule:${orgId}`}))`.execute(trx);
    const oldest = await trx
      .selectFrom("job_views")
      .select("limits")
      .where("org_id", "=", orgId)
      .where("status", "=", "waiting")
      .orderBy("created_at")
      .orderBy("id")
      .limit(1)
      .executeTakeFirst();
    if (!oldest) return { dispatched: 0, full: false };
    const current = plans && (await trx.selectFrom("org_plans").select("plan").where("org_id", "=", orgId).executeTakeFirst());
    // An upgrade opens slots for jobs already waiting; a downgrade holds the next ones back until the org is under it.
    const currentConcurrency = plans && current ? planOf(current.plan, plans).concurrency : undefined;
    const limitOf = (limits: { concurrency: number }) => currentConcurrency ?? limits.concurrency;
    let active = await countActiveJobs(trx, orgId);
    const slots = limitOf(oldest.limits) - active;
    if (slots <= 0) return { dispatched: 0, full: true };
    // Locks the candidates: a concurrent cancel of one of them finishes first, and the row is re-checked after.
    const candidates = await trx
      .selectFrom("job_views")
      .select(["id", "limits"])
      .where("org_id", "=", orgId)
      .where("status", "=", "waiting")
      .orderBy("created_at")
      .orderBy("id")
      .limit(slots)
      .forUpdate()
      .execute();
    let dispatched = 0;
    const now = Date.now();
    for (const candidate of candidates) {
      // Submission order per org: a job whose (older) plan allowed fewer slots blocks the ones behind it.
      if (active >= limitOf(candidate.limits)) break;
      const loaded = await loadJob(trx, candidate.id);
      if (loaded.state?.status !== "waiting") continue;
      // A pass runs in whichever request asked for it (passes coalesce): the dispatch joins the job's own trace,
      // stored with its first event, so the worker's spans land in the trace of the request that submitted it.
      const submitted = await trx.selectFrom("events").select("metadata").where("stream_id", "=", candidate.id).where("version", "=", 1).executeTakeFirst();
      const state = loaded.state;
      await withTraceHeaders(submitted?.metadata ?? {}, () => commitJobEvents(trx, loaded, decide(state, { type: "DispatchJob", now }), now));
      active += 1;
      dispatched += 1;
    }
    return { dispatched, full: dispatched === slots };
  });
}

/** Orgs that have waiting jobs: the periodic sweep's work list. */
export async function orgsWithWaitingJobs(db: Kysely<JobsDatabase>): Promise<string[]> {
  const rows = await db.selectFrom("job_views").select("org_id").distinct().where("status", "=", "waiting").execute();
  return rows.map((row) => row.org_id);
}
