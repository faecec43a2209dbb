import type { EventStoreTables } from "@renderbus/db";
import type { PlanName } from "@renderbus/plans";

export type Role = "owner" | "admin" | "member";
export type LedgerKind = "grant" | "reserve" | "capture" | "release";

/**
 * Rows of the `auth` schema's tables. `organization` and `member` belong to Better Auth's organization plugin: they
 * are written through Better Auth only, and read here directly because resolving a session's org is on the hot path.
 */
export interface AuthTables extends EventStoreTables {
  organization: { id: string; name: string; slug: string; logo: string | null; metadata: string | null; createdAt: Date };
  /** `role` is Better Auth's: one role, or several separated by commas (see `effectiveRole`). */
  member: { id: string; organizationId: string; userId: string; role: string; createdAt: Date };
  /** Better Auth's user table: read only, for whether an address is confirmed (billing/held-credits.ts). */
  user: { id: string; email: string; emailVerified: boolean };
  /** Better Auth's session table: only the organization plugin's active organization is touched directly. */
  session: { id: string; userId: string; activeOrganizationId: string | null };
  /** Renderbus's side of an organization (same id as `organization`): plan, webhook target, billing. */
  orgs: {
    id: string;
    plan: PlanName;
    webhook_url: string | null;
    webhook_secret_encrypted: string | null;
    /** When the org's next credit month starts (see billing/monthly-credits.ts). */
    credits_renew_at: number;
    /** The user whose email confirmation releases the org's credits, while they are held (billing/held-credits.ts). */
    credits_held_for: string | null;
    created_at: number;
    updated_at: number;
  };
  api_keys: {
    id: string;
    org_id: string;
    name: string;
    key_hash: string;
    start: string;
    created_by: string;
    created_at: number;
    last_used_at: number | null;
    revoked_at: number | null;
  };
  credit_balances: { org_id: string; available: number; reserved: number; updated_at: number };
  settled_jobs: { org_id: string; job_id: string; settled_at: number };
  /** One row per alert email sent (alerts/endpoint-disabled.consumer.ts): a redelivered event mails nobody twice. */
  alert_emails: { event_id: string; user_id: string; sent_at: number };
  /** Disables admitted to be mailed (alerts/alert-limit.ts): at most ENDPOINT_ALERTS_PER_ORG_PER_HOUR of an org's. */
  alert_events: { event_id: string; org_id: string; endpoint_id: string | null; admitted_at: number };
  credit_ledger: {
    id: string;
    org_id: string;
    kind: LedgerKind;
    credits: number;
    job_id: string | null;
    entry_key: string | null;
    balance_after: number;
    description: string;
    created_at: number;
  };
}

/** The schema every auth table lives in. */
export const AUTH_SCHEMA = "auth";

