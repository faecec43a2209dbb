import { sql, type Kysely } from "kysely";
import { createEventStoreTables, type Migrations } from "@renderbus/db";

/**
 * The `dispatcher` schema. Typed against `Kysely<any>` so each migration stays frozen as written.
 * - `deliveries` is also the due-time queue: `next_attempt_at` is set while an attempt is owed, `lease_*` while a
 *   replica is sending it. A crash leaves the row due (or leased until the lease runs out), so nothing is lost.
 * - `batches` + `batch_terminal_jobs` count terminal jobs exactly once per (batch, job).
 * - The outbox comes from the shared event-store tables. Their `events` table was never used (deliveries are state,
 *   not an event-sourced aggregate) and is dropped.
 */
export const migrations: Migrations = {
  "2026-11-23-001-init": {
    async up(db: Kysely<any>) {
      await sql`
        create table deliveries (
          id text primary key,
          org_id text not null,
          event text not null,
          source_event_id text unique,
          job_id text,
          batch_id text,
          url text not null,
          body text not null,
          status text not null,
          attempts integer not null default 0,
          chain_attempts integer not null default 0,
          next_attempt_at bigint,
          lease_until bigint,
          lease_token text,
          last_attempt_at bigint,
          last_response_status integer,
          last_error text,
          event_at bigint not null,
          first_attempt_at bigint,
          created_at bigint not null
        )`.execute(db);
      await sql`create index deliveries_due on deliveries (next_attempt_at) where next_attempt_at is not null`.execute(db);
      await sql`create index deliveries_leased on deliveries (org_id) where lease_until is not null`.execute(db);
      await sql`create index deliveries_org on deliveries (org_id, id desc)`.execute(db);
      await sql`create index deliveries_job on deliveries (job_id) where job_id is not null`.execute(db);
      await sql`
        create table delivery_attempts (
          delivery_id text not null references deliveries (id) on delete cascade,
          attempt integer not null,
          started_at bigint not null,
          response_status integer,
          error text,
          latency_ms integer not null,
          response_excerpt text,
          primary key (delivery_id, attempt)
        )`.execute(db);
      await sql`
        create table batches (
          batch_id text primary key,
          org_id text not null,
          job_count integer not null,
          created_at bigint not null,
          completed_at bigint
        )`.execute(db);
      await sql`
        create table batch_terminal_jobs (
          batch_id text not null,
          job_id text not null,
          outcome text not null,
          recorded_at bigint not null,
          primary key (batch_id, job_id)
        )`.execute(db);
      await sql`
        create table processed_events (
          event_id text primary key,
          processed_at bigint not null
        )`.execute(db);
      await createEventStoreTables(db, "dispatcher");
    },
  },
  "2026-11-23-002-delivery-trace-context": {
    async up(db: Kysely<any>) {
      // Trace context of the causing event, so retries minutes later (on any replica) join the job's trace.
      await sql`alter table deliveries add column trace_headers text`.execute(db);
    },
  },
  "2026-11-23-003-announce-on-first-attempt": {
    async up(db: Kysely<any>) {
      // A delivery attempted at once is announced by its attempt only; the few that wait (backlog, crash, an org
      // at its cap) are found through this flag and announced as pending. Existing rows were announced at insert.
      await sql`alter table deliveries add column announced boolean not null default true`.execute(db);
      await sql`create index deliveries_unannounced on deliveries (created_at) where not announced`.execute(db);
    },
  },
  "2026-11-24-001-queue-table-autovacuum": {
    async up(db: Kysely<any>) {
      // Queue tables: every row is updated or deleted soon after it is written, so dead rows pile up at the rate of
      // the traffic, and the claim scans (ordered index scans with SKIP LOCKED) wade through them. The default
      // trigger (20% of the table) lets a small, busy table go unvacuumed for a long time; vacuum after every 5,000
      // dead rows instead, without cost-based throttling (measured in bench/findings.md, "dead rows").
      await sql`alter table outbox set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000, autovacuum_vacuum_cost_delay = 0)`.execute(db);
      await sql`alter table deliveries set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000, autovacuum_vacuum_cost_delay = 0)`.execute(db);
    },
  },
  "2026-11-24-002-retention-indexes": {
    async up(db: Kysely<any>) {
      // The retention sweep (src/retention/prune.ts) deletes by age in batches: each batch finds its rows through
      // these instead of scanning the tables from the start.
      await sql`create index deliveries_created on deliveries (created_at)`.execute(db);
      await sql`create index processed_events_processed on processed_events (processed_at)`.execute(db);
      await sql`create index batches_completed on batches (completed_at) where completed_at is not null`.execute(db);
    },
  },
  "2026-11-24-003-drop-unused-events": {
    async up(db: Kysely<any>) {
      // Created with the outbox by createEventStoreTables and never written: deliveries are tables plus the outbox.
      await sql`drop table events`.execute(db);
    },
  },
  "2026-11-24-004-endpoints": {
    async up(db: Kysely<any>) {
      // Webhook endpoints (docs/webhooks.md, "Endpoints"). `ep_default` is the org's webhookUrl: its URL and secret
      // stay with the org in the auth service, so its row (when there is one) holds only its settings; ids are
      // therefore unique per org, not globally. Secrets are sealed (libs/secret-box) with the org id as context.
      await sql`
        create table endpoints (
          org_id text not null,
          id text not null,
          url text,
          description text not null default '',
          events text[] not null,
          enabled boolean not null default true,
          disabled_reason text,
          disabled_at bigint,
          ordering text not null default 'none',
          rate_limit_per_second integer,
          retry_schedule text not null default 'seed',
          secret_sealed text,
          previous_secret_sealed text,
          previous_secret_expires_at bigint,
          last_recover_at bigint,
          created_at bigint not null,
          updated_at bigint not null,
          primary key (org_id, id)
        )`.execute(db);
      // One delivery per (event, endpoint): a redelivered job event creates nothing new for any endpoint. Rows from
      // before endpoints all went to the org's webhookUrl.
      await sql`alter table deliveries add column endpoint_id text not null default 'ep_default'`.execute(db);
      await sql`alter table deliveries drop constraint deliveries_source_event_id_key`.execute(db);
      await sql`alter table deliveries add constraint deliveries_source_event_endpoint unique (source_event_id, endpoint_id)`.execute(db);
      // Auto-disable and recovery look at one endpoint's deliveries by time.
      await sql`create index deliveries_endpoint on deliveries (org_id, endpoint_id, created_at)`.execute(db);
    },
  },
  "2026-11-24-005-fifo-and-throttling": {
    async up(db: Kysely<any>) {
      // FIFO endpoints and throttling (docs/webhooks.md, "Ordering" and "Throttling"), both enforced by the claim.
      // `sequence`: a delivery's place in its FIFO endpoint's queue, assigned at insert (null for other endpoints).
      await sql`alter table deliveries add column sequence bigint`.execute(db);
      // The head of an endpoint's queue: its pending deliveries in order.
      await sql`create index deliveries_endpoint_pending on deliveries (org_id, endpoint_id, sequence, created_at, id) where status = 'pending'`.execute(db);
      // The claim looks for gated (FIFO or rate-limited) endpoints on every round: few rows among many endpoints.
      await sql`create index endpoints_gated on endpoints (org_id, id) where ordering = 'fifo' or rate_limit_per_second is not null`.execute(db);
      // Per endpoint: the last sequence given out, and (rate limit) when the next attempt may start, in ms of
      // PostgreSQL's clock (fractional: 1000 / rateLimitPerSecond apart).
      await sql`
        create table endpoint_queues (
          org_id text not null,
          endpoint_id text not null,
          last_sequence bigint not null default 0,
          next_slot_at double precision not null default 0,
          primary key (org_id, endpoint_id)
        )`.execute(db);
    },
  },
  "2026-11-24-006-progress-throttle": {
    async up(db: Kysely<any>) {
      // Opt-in `job.progress` webhooks (docs/webhooks.md, "Progress events"): at most one per (endpoint, job) every
      // 5 s across replicas. A row is moved forward only when its last delivery is old enough (a conditional upsert);
      // the retention sweep drops rows of jobs that stopped reporting.
      await sql`
        create table progress_throttle (
          org_id text not null,
          endpoint_id text not null,
          job_id text not null,
          last_sent_at bigint not null,
          primary key (org_id, endpoint_id, job_id)
        )`.execute(db);
      await sql`create index progress_throttle_sent on progress_throttle (last_sent_at)`.execute(db);
      await sql`alter table progress_throttle set (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 5000, autovacuum_vacuum_cost_delay = 0)`.execute(db);
    },
  },
  "2026-11-24-007-attempt-headers": {
    async up(db: Kysely<any>) {
      // The attempt log (docs/webhooks.md, "Delivery log"): the request's headers without its signatures, and the
      // receiver's response headers. Null for attempts recorded before this.
      await sql`alter table delivery_attempts add column request_headers jsonb, add column response_headers jsonb`.execute(db);
    },
  },
  "2026-11-30-001-endpoint-change-notify": {
    async up(db: Kysely<any>) {
      // Every committed change to an org's endpoints tells every replica (NOTIFY, payload: the org id), which drops its
      // cached copy (src/endpoints/endpoint-changes.ts): a trigger, so that no write path, an operator's SQL included,
      // can change an endpoint without it. The channel's name is ENDPOINTS_CHANGED_CHANNEL's; frozen here as written.
      await sql`
        create function notify_endpoints_changed() returns trigger language plpgsql as $$
        begin
          perform pg_notify('dispatcher_endpoints_changed', coalesce(new.org_id, old.org_id));
          return null;
        end
        $$`.execute(db);
      await sql`
        create trigger endpoints_changed after insert or update or delete on endpoints
        for each row execute function notify_endpoints_changed()`.execute(db);
    },
  },
  "2026-12-02-001-deliveries-by-org-due": {
    async up(db: Kysely<any>) {
      // The claim's way to orgs other than the ones heading the due queue (src/deliveries/delivery-queue.ts): one
      // descent from each org to the next with a queued row, in hashtext(org_id) order (a random start, fair to every
      // org; org ids sort by creation), and an org's earliest due rows. Without it, an org at its in-flight cap heading
      // the queue made every claim read that org's whole backlog. The predicate is deliveries_due's: still needed for
      // the queue's earliest time; deliveries_leased still counts an org's leases (leased rows sit here among its
      // future retries).
      await sql`create index deliveries_org_due on deliveries (hashtext(org_id), org_id, next_attempt_at) where next_attempt_at is not null`.execute(db);
    },
  },
  "2026-12-02-002-deliveries-by-org-endpoint-due": {
    async up(db: Kysely<any>) {
      // deliveries_org_due with the endpoint after the org: the claim's walk steps from endpoint to endpoint, so that it
      // steps over a gated (FIFO or rate-limited) endpoint's backlog in one descent instead of reading it row by row,
      // and still reaches the org's other endpoints; an endpoint's earliest due rows are one range of it.
      await sql`drop index deliveries_org_due`.execute(db);
      await sql`create index deliveries_org_endpoint_due on deliveries (hashtext(org_id), org_id, endpoint_id, next_attempt_at) where next_attempt_at is not null`.execute(db);
    },
  },
  "2026-12-02-003-fifo-head-order": {
    async up(db: Kysely<any>) {
      // A FIFO endpoint's head is its first pending delivery by `sequence nulls first` (src/deliveries/endpoint-flow.ts,
      // dueFifoHeadOf); this index had `sequence` in the default order (nulls last), which cannot serve that, so each
      // head was found by reading and sorting the endpoint's whole backlog. Same columns and predicate otherwise.
      await sql`drop index deliveries_endpoint_pending`.execute(db);
      await sql`create index deliveries_endpoint_pending on deliveries (org_id, endpoint_id, sequence nulls first, created_at, id) where status = 'pending'`.execute(db);
    },
  },
  "2026-12-02-004-attempt-slot": {
    async up(db: Kysely<any>) {
      // A rate-limited endpoint's attempt keeps the start slot PostgreSQL gave it (src/deliveries/endpoint-flow.ts; on
      // a replica whose clock is over a second off PostgreSQL's, the same wait on its own clock: slotStart): the limit
      // holds on the slots exactly, and how late a replica short of CPU started after its slot is this column against
      // started_at. Null for endpoints without a limit and for attempts recorded before it.
      await sql`alter table delivery_attempts add column slot_at bigint`.execute(db);
    },
  },
};
