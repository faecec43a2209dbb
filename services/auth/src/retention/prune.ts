import { sql, type Kysely } from "kysely";
import { deleteInBatches, type RetentionStep } from "@renderbus/db";
import type { AuthTables } from "../database.js";

/**
 * How long the record of an alert email is kept (`alert_emails`): it stops a redelivered announcement from mailing
 * again, and WEBHOOKS_EVENTS keeps an announcement 7 days at most, so 30 days outlasts any redelivery.
 */
export const ALERT_EMAIL_RETENTION_MS = 30 * 24 * 60 * 60 * 1000;

export interface AuthRetention {
  /** `settled_jobs` markers (SETTLED_JOB_RETENTION_DAYS, 30). */
  settledJobRetentionMs: number;
}

/**
 * What the auth service prunes (SECURITY-AUDIT finding 21): `settled_jobs` markers past their retention, and records
 * of alert emails and of the disables admitted to be mailed past {@link ALERT_EMAIL_RETENTION_MS}.
 *
 * A marker makes settlement idempotent (a job event delivered twice settles once) and refuses a reservation that
 * arrives after its job ended. Both come from messages about a job that can only arrive for a short while after it
 * ends: JOBS_EVENTS keeps job events 7 days, and a job's dispatch is failed by the jobs watchdog (minutes) and ends
 * its deliveries, so a worker's reservation for it comes within that time too. The retention (at least 8 days,
 * 30 by default) outlasts both by far. The ledger itself still has the job's capture and release entries.
 *
 * Never pruned: `credit_ledger` (the org's billing history, shown as usage), balances, keys and orgs, and `outbox`
 * (the relay deletes rows once JetStream has them; a row still there is unpublished).
 */
export function authRetentionSteps(db: Kysely<AuthTables>, retention: AuthRetention): RetentionStep[] {
  return [
    {
      name: "settled_jobs",
      prune: (now, stopping) => deleteInBatches(db, "settled_jobs", sql<boolean>`settled_at < ${now - retention.settledJobRetentionMs}`, { stopping }),
    },
    {
      name: "alert_emails",
      prune: (now, stopping) => deleteInBatches(db, "alert_emails", sql<boolean>`sent_at < ${now - ALERT_EMAIL_RETENTION_MS}`, { stopping }),
    },
    {
      // Kept as long as the emails' records: a disable redelivered later is still known as admitted.
      name: "alert_events",
      prune: (now, stopping) => deleteInBatches(db, "alert_events", sql<boolean>`admitted_at < ${now - ALERT_EMAIL_RETENTION_MS}`, { stopping }),
    },
  ];
}
