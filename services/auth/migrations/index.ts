import { sql, type Kysely } from "kysely";
import { createEventStoreTables, type Migrations } from "@renderbus/db";

/**
 * The `auth` schema's own tables. Better Auth's tables (user, session, account, verification, and the organization
 * plugin's organization, member, invitation) live in the same schema but are created by Better Auth's
 * `getMigrations`, which runs BEFORE these (see src/store.ts), so a migration here may read and fill them.
 * Typed against Kysely<any> so each migration stays frozen in time.
 */
export const migrations: Migrations = {
  "2026-11-23-001-init": {
    async up(db: Kysely<any>) {
      await sql`
        create table orgs (
          id text primary key,
          name text not null,
          plan text not null,
          webhook_url text,
          -- AES-256-GCM ciphertext of the webhook secret ("v1:<iv>:<tag>:<data>", base64); never the plain secret.
          webhook_secret_encrypted text,
          created_at bigint not null,
          updated_at bigint not null
        )`.execute(db);
      await sql`
        create table members (
          org_id text not null references orgs(id) on delete cascade,
          user_id text not null,
          role text not null check (role in ('owner', 'admin', 'member')),
          created_at bigint not null,
          primary key (org_id, user_id)
        )`.execute(db);
      await sql`create index members_user on members (user_id, created_at)`.execute(db);
      await sql`
        create table api_keys (
          id text primary key,
          org_id text not null references orgs(id) on delete cascade,
          name text not null,
          -- SHA-256 hex of the full key: the only form of the key that is stored.
          key_hash text not null unique,
          start text not null,
          created_by text not null,
          created_at bigint not null,
          last_used_at bigint,
          revoked_at bigint
        )`.execute(db);
      await sql`create index api_keys_org on api_keys (org_id, id desc)`.execute(db);
      await sql`
        create table credit_balances (
          org_id text primary key references orgs(id) on delete cascade,
          -- The checks are the last line of defence: the balance can never go below zero.
          available bigint not null default 0 check (available >= 0),
          reserved bigint not null default 0 check (reserved >= 0),
          updated_at bigint not null
        )`.execute(db);
      await sql`
        create table credit_ledger (
          id text primary key,
          org_id text not null references orgs(id) on delete cascade,
          kind text not null check (kind in ('grant', 'reserve', 'capture', 'release')),
          credits bigint not null check (credits >= 0),
          job_id text,
          -- Natural key of job entries ("reserve:<job>", "capture:<job>", ...): redelivered events change nothing.
          entry_key text unique,
          balance_after bigint not null,
          description text not null,
          created_at bigint not null
        )`.execute(db);
      await sql`create index credit_ledger_org on credit_ledger (org_id, id desc)`.execute(db);
      await sql`create index credit_ledger_job on credit_ledger (job_id) where job_id is not null`.execute(db);
      // Only the outbox is used; the event-store table comes along with the lib's helper.
      await createEventStoreTables(db, "auth");
    },
  },
  "2026-11-24-001-organizations-on-better-auth": {
    // Organizations and memberships move to Better Auth's organization plugin (invitations, member management).
    // `orgs` keeps what is Renderbus's own: plan, webhook target, and the anchor of keys and credits.
    async up(db: Kysely<any>) {
      await sql`
        insert into organization (id, name, slug, "createdAt")
        select id, name, lower(id), to_timestamp(created_at / 1000.0) from orgs
        on conflict (id) do nothing`.execute(db);
      await sql`
        insert into member (id, "organizationId", "userId", role, "createdAt")
        select gen_random_uuid()::text, org_id, user_id, role, to_timestamp(created_at / 1000.0) from members`.execute(db);
      await sql`drop table members`.execute(db);
      await sql`alter table orgs drop column name`.execute(db);
      await sql`alter table orgs add constraint orgs_organization_fk foreign key (id) references organization(id) on delete cascade`.execute(db);
    },
  },
  "2026-11-24-002-settled-jobs": {
    async up(db: Kysely<any>) {
      // One row per settled job, also when nothing was reserved (a job cancelled or failed before its worker reserved):
      // a reservation arriving after the settlement must be refused, or its credits would stay reserved for good.
      await sql`
        create table settled_jobs (
          org_id text not null,
          job_id text not null,
          settled_at bigint not null,
          primary key (org_id, job_id)
        )`.execute(db);
      // Jobs settled before this table existed are recognised by their capture or release entries.
      await sql`
        insert into settled_jobs (org_id, job_id, settled_at)
        select distinct org_id, job_id, 0 from credit_ledger where job_id is not null and kind in ('capture', 'release')
        on conflict do nothing`.execute(db);
    },
  },
  "2026-11-24-003-monthly-credits": {
    async up(db: Kysely<any>) {
      // The start of each org's next credit month (see src/billing/monthly-credits.ts): one month after creation, in
      // UTC, on the same day or the last day of a shorter month (PostgreSQL's month arithmetic clamps the same way).
      // Orgs older than a month are due at once and get the current month's top-up on the first renewal run.
      await sql`alter table orgs add column credits_renew_at bigint`.execute(db);
      await sql`
        update orgs set credits_renew_at =
          (extract(epoch from ((to_timestamp(created_at / 1000.0) at time zone 'UTC') + interval '1 month') at time zone 'UTC') * 1000)::bigint`.execute(db);
      await sql`alter table orgs alter column credits_renew_at set not null`.execute(db);
      await sql`create index orgs_credits_renew_at on orgs (credits_renew_at)`.execute(db);
    },
  },
  "2026-11-24-004-settled-jobs-retention": {
    async up(db: Kysely<any>) {
      // The retention sweep (src/retention/prune.ts) deletes markers by `settled_at`. Those carried over from the
      // ledger were stamped 0; they get the time of their job's last ledger entry instead, so a job settled just
      // before that migration keeps its marker as long as any other (a redelivered event must not settle it again).
      await sql`
        update settled_jobs s set settled_at = coalesce(
          (select max(l.created_at) from credit_ledger l where l.org_id = s.org_id and l.job_id = s.job_id), 0)
        where settled_at = 0`.execute(db);
      await sql`create index settled_jobs_settled_at on settled_jobs (settled_at)`.execute(db);
    },
  },
  "2026-11-24-005-drop-unused-events": {
    async up(db: Kysely<any>) {
      // Created with the outbox by createEventStoreTables and never written: auth is tables plus the outbox.
      await sql`drop table events`.execute(db);
    },
  },
  "2026-12-01-001-credits-held-until-verified": {
    async up(db: Kysely<any>) {
      // Existing orgs hold nothing: their users signed up before addresses were confirmed (src/billing/held-credits.ts).
      await sql`alter table orgs add column credits_held_for text`.execute(db);
      await sql`create index orgs_credits_held_for on orgs (credits_held_for) where credits_held_for is not null`.execute(db);
    },
  },
  "2026-12-01-002-alert-emails": {
    async up(db: Kysely<any>) {
      // Who was emailed about which bus event (an endpoint the dispatcher disabled): pruned after ALERT_EMAIL_RETENTION_DAYS.
      await sql`
        create table alert_emails (
          event_id text not null,
          user_id text not null,
          sent_at bigint not null,
          primary key (event_id, user_id)
        )`.execute(db);
      await sql`create index alert_emails_sent_at on alert_emails (sent_at)`.execute(db);
    },
  },
  "2026-12-01-003-alert-events": {
    async up(db: Kysely<any>) {
      // The disables whose emails went out (or go out), per org: ENDPOINT_ALERTS_PER_ORG_PER_HOUR counts them.
      await sql`
        create table alert_events (
          event_id text primary key,
          org_id text not null,
          admitted_at bigint not null
        )`.execute(db);
      await sql`create index alert_events_org on alert_events (org_id, admitted_at)`.execute(db);
      await sql`create index alert_events_admitted_at on alert_events (admitted_at)`.execute(db);
    },
  },
  "2026-12-02-001-alert-events-endpoint": {
    async up(db: Kysely<any>) {
      // An endpoint's disable is mailed once an hour at most (src/alerts/alert-limit.ts): which endpoint each admitted
      // disable was (null for those admitted before this column).
      await sql`alter table alert_events add column endpoint_id text`.execute(db);
      await sql`create index alert_events_endpoint on alert_events (org_id, endpoint_id, admitted_at)`.execute(db);
    },
  },
};
