import { sql, type Kysely } from "kysely";
import { createEventStoreTables, type Migrations } from "@renderbus/db";

/** Schema of the jobs service. Migrations are typed against Kysely<any> so they stay frozen in time. */
export const JOBS_SCHEMA = "jobs";

export const migrations: Migrations = {
  "2026-11-23-001-init": {
    async up(db: Kysely<any>) {
      await createEventStoreTables(db, JOBS_SCHEMA);

      // The read model of the job aggregate: one row per job, written in the same transaction as its events.
      await sql`
        create table job_views (
          id text primary key,
          org_id text not null,
          batch_id text,
          type text not null,
          status text not null,
          inputs jsonb not null,
          params jsonb not null,
          metadata jsonb not null,
          result jsonb,
          cost jsonb,
          error jsonb,
          plan text not null,
          limits jsonb not null,
          submitted_by text not null,
          created_at bigint not null,
          dispatched_at bigint,
          started_at bigint,
          completed_at bigint,
          version integer not null
        )`.execute(db);
      // Keyset pagination (newest first) and the scheduler's "oldest waiting of an org" both walk this index.
      await sql`create index job_views_org_created on job_views (org_id, created_at desc, id desc)`.execute(db);
      await sql`create index job_views_org_status on job_views (org_id, status, created_at, id)`.execute(db);
      await sql`create index job_views_batch on job_views (batch_id) where batch_id is not null`.execute(db);
      await sql`create index job_views_waiting on job_views (org_id) where status = 'waiting'`.execute(db);

      await sql`
        create table batch_views (
          id text primary key,
          org_id text not null,
          job_ids jsonb not null,
          job_count integer not null,
          status text not null,
          waiting integer not null default 0,
          dispatched integer not null default 0,
          running integer not null default 0,
          completed integer not null default 0,
          failed integer not null default 0,
          cancelled integer not null default 0,
          created_at bigint not null,
          completed_at bigint
        )`.execute(db);

      await sql`
        create table idempotency_keys (
          org_id text not null,
          key text not null,
          request_hash text not null,
          state text not null,
          response jsonb,
          created_at bigint not null,
          primary key (org_id, key)
        )`.execute(db);

      // Delivery metadata projected from the dispatcher's `webhooks.events.delivery.updated`.
      await sql`
        create table webhook_deliveries (
          id text primary key,
          org_id text not null,
          job_id text not null,
          event text not null,
          status text not null,
          attempts integer not null,
          last_attempt_at bigint,
          next_attempt_at bigint,
          last_response_status integer,
          last_error text,
          occurred_at bigint not null
        )`.execute(db);
      await sql`create index webhook_deliveries_job on webhook_deliveries (job_id)`.execute(db);
    },
  },
  "2026-11-23-002-batch-views-listing": {
    async up(db: Kysely<any>) {
      // GET /batches: the org's batches newest first, keyset paginated like jobs.
      await sql`create index batch_views_org_created on batch_views (org_id, created_at desc, id desc)`.execute(db);
    },
  },
  "2026-11-24-001-outbox-autovacuum": {
    async up(db: Kysely<any>) {
      // Queue tables: every row is updated or deleted soon after it is written, so dead rows pile up at the rate of
      // the traffic, and the claim scans (ordered index scans with SKIP LOCKED) wade through them. The default
      // trigger (20% of the table) lets a small, busy table go unvacuumed for a long time; vacuum after every 5,000
      // dead rows instead, without cost-based throttling (measured in bench/findings.md, "dead rows").
      await sql`alter table outbox set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000, autovacuum_vacuum_cost_delay = 0)`.execute(db);
    },
  },
  "2026-11-24-002-retention-indexes": {
    async up(db: Kysely<any>) {
      // The retention sweep (src/retention/prune.ts) deletes by age in batches: each batch finds its rows through
      // these instead of scanning the tables from the start.
      await sql`create index idempotency_keys_created on idempotency_keys (created_at)`.execute(db);
      await sql`create index webhook_deliveries_occurred on webhook_deliveries (occurred_at)`.execute(db);
    },
  },
  "2026-11-25-001-dispatch-resends": {
    async up(db: Kysely<any>) {
      // Work messages sent again for jobs whose dispatch left the stream without a start (src/watchdog/
      // resend-lost-dispatches.ts): how many times, and when last, per job.
      await sql`create table dispatch_resends (
          job_id text primary key,
          resends integer not null,
          last_at bigint not null
        )`.execute(db);
      await sql`create index dispatch_resends_last_at on dispatch_resends (last_at)`.execute(db);
    },
  },
  "2026-12-01-001-org-plans": {
    async up(db: Kysely<any>) {
      // Each org's current plan, from the auth service's org.updated events (src/plans/org-plan-consumer.ts): the
      // scheduler gives an org the concurrency of the plan it is on now, not the one its waiting jobs were submitted on.
      await sql`create table org_plans (
          org_id text primary key,
          plan text not null,
          changed_at bigint not null
        )`.execute(db);
    },
  },
  "2026-12-01-002-unqueued-dispatches": {
    async up(db: Kysely<any>) {
      // Dispatched jobs whose work message the watchdog saw out of the queue (delivered to a worker, or gone from the
      // stream), and when it first did: the dispatched timeout counts from then (src/watchdog/dispatched-timeout.ts).
      // A row goes once its job is no longer dispatched, or when its message is found queued again.
      await sql`create table unqueued_dispatches (
          job_id text primary key,
          seen_at bigint not null
        )`.execute(db);
    },
  },
  "2026-12-02-001-job-holds": {
    async up(db: Kysely<any>) {
      // The latest HoldJob of each dispatched or running job (src/watchdog/job-holds.ts): a worker still preparing a
      // job (downloading inputs) or finishing it (storing its output) pushes the watchdog's deadline from then. A row
      // goes once its job has ended.
      await sql`create table job_holds (
          job_id text primary key,
          held_at bigint not null
        )`.execute(db);
    },
  },
};
