import type { EventStoreTables } from "@renderbus/db";
import type { PlanName } from "@renderbus/plans";

export type Role = "owner" | "admin" | "member";
export type LedgerKind = "grant" | "reserve" | "capture" | "release";

/** Rows of the `auth` schema's own tables (Better Auth's tables are reached through Better Auth only). */
export interface AuthTables extends EventStoreTables {
  orgs: {
    id: string;
    name: string;
    plan: PlanName;
    webhook_url: string | null;
    webhook_secret_encrypted: string | null;
    created_at: number;
    updated_at: number;
  };
  members: { org_id: string; user_id: string; role: Role; created_at: number };
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

