import { sql, type Kysely } from "kysely";
import type { OutboxRelay } from "@renderbus/db";
import { Histogram, registerGaugeReader, type Registry } from "@renderbus/telemetry";
import type { JobsDatabase } from "./db/jobs-database.js";
import { JOB_STATUSES } from "@renderbus/job-types";

/**
 * The jobs service's Prometheus metrics. They are read from the projections at scrape time, so they describe the
 * whole system, not one replica: every replica reports the same values (dashboards aggregate them with `max`).
 * - `jobs_by_status{status}`: jobs per lifecycle status (`waiting` is the scheduler's queue depth).
 * - `jobs_oldest_waiting_seconds`: how long the head of the queue has waited for a concurrency slot.
 * - `jobs_scheduler_wait_seconds`: waiting -> dispatched, for the jobs dispatched since the previous scrape.
 * - `outbox_backlog`: committed events not yet published to JetStream.
 */
export function registerJobsMetrics(registry: Registry, db: Kysely<JobsDatabase>, relay: OutboxRelay): void {
  registerGaugeReader(
    registry,
    { name: "jobs_by_status", help: "Jobs per lifecycle status" },
    async () => {
      const rows = await db.selectFrom("job_views").select(["status", sql<number>`count(*)::int`.as("count")]).groupBy("status").execute();
      const counts: Record<string, number> = Object.fromEntries(JOB_STATUSES.map((status) => [status, 0]));
      for (const row of rows) counts[row.status] = row.count;
      return counts;
    },
    "status",
  );
  registerGaugeReader(registry, { name: "jobs_oldest_waiting_seconds", help: "Age of the oldest waiting job" }, async () => {
    const row = await db.selectFrom("job_views").select(sql<number | null>`min(created_at)`.as("oldest")).where("status", "=", "waiting").executeTakeFirst();
    return row?.oldest ? Math.max(0, Date.now() - Number(row.oldest)) / 1000 : 0;
  });
  registerGaugeReader(registry, { name: "outbox_backlog", help: "Committed events not yet published to JetStream" }, () => relay.backlog());

  // Observed at scrape time from the projection (the scheduler stays free of metrics code); the first scrape
  // looks back five minutes.
  let since = Date.now() - 5 * 60_000;
  new Histogram({
    name: "jobs_scheduler_wait_seconds",
    help: "Time jobs waited for a concurrency slot (created -> dispatched)",
    buckets: [0.01, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 300, 900],
    registers: [registry],
    async collect() {
      const until = Date.now();
      const rows = await db
        .selectFrom("job_views")
        .select(["created_at", "dispatched_at"])
        .where("dispatched_at", ">", since)
        .where("dispatched_at", "<=", until)
        .execute()
        .catch(() => undefined);
      if (!rows) return;
      since = until;
      for (const row of rows) this.observe(Math.max(0, Number(row.dispatched_at) - Number(row.created_at)) / 1000);
    },
  });
}
