import type { ColumnType, Generated } from "kysely";
import type { EventStoreTables } from "@renderbus/db";

type Json<T> = ColumnType<T, T | string, T | string>;

/** A row of `job_views`: the job's current state as the API reads it. */
export interface JobViewTable {
  id: string;
  org_id: string;
  batch_id: string | null;
  type: string;
  status: string;
  inputs: Json<Record<string, unknown>>;
  params: Json<Record<string, unknown>>;
  metadata: Json<Record<string, unknown>>;
  result: Json<unknown | null>;
  cost: Json<unknown | null>;
  error: Json<unknown | null>;
  plan: string;
  limits: Json<{ maxRunSeconds: number; maxInputBytes: number; concurrency: number }>;
  submitted_by: string;
  created_at: number;
  dispatched_at: number | null;
  started_at: number | null;
  completed_at: number | null;
  version: number;
}

export interface BatchViewTable {
  id: string;
  org_id: string;
  job_ids: Json<string[]>;
  job_count: number;
  status: string;
  waiting: Generated<number>;
  dispatched: Generated<number>;
  running: Generated<number>;
  completed: Generated<number>;
  failed: Generated<number>;
  cancelled: Generated<number>;
  created_at: number;
  completed_at: number | null;
}

export interface IdempotencyKeyTable {
  org_id: string;
  key: string;
  request_hash: string;
  /** `pending` while the first request runs, `done` once its response is stored. */
  state: string;
  response: Json<unknown | null>;
  created_at: number;
}

export interface WebhookDeliveryTable {
  id: string;
  org_id: string;
  job_id: string;
  event: string;
  status: string;
  attempts: number;
  last_attempt_at: number | null;
  next_attempt_at: number | null;
  last_response_status: number | null;
  last_error: string | null;
  occurred_at: number;
}

/** Tables of the `jobs` schema. */
/** A row of `dispatch_resends`: the work messages sent again for one job (src/watchdog/resend-lost-dispatches.ts). */
export interface DispatchResendTable {
  job_id: string;
  resends: number;
  last_at: number;
}

/** A row of `job_holds`: the latest HoldJob of a dispatched or running job (src/watchdog/job-holds.ts). */
export interface JobHoldTable {
  job_id: string;
  held_at: number;
}

/**
 * A row of `unqueued_dispatches`: when the watchdog first saw a dispatched job's work message out of the queue,
 * delivered or gone (src/watchdog/dispatched-timeout.ts).
 */
export interface UnqueuedDispatchTable {
  job_id: string;
  seen_at: number;
}

/** An org's plan as last announced by the auth service (auth.events.org.updated). */
export interface OrgPlanTable {
  org_id: string;
  plan: string;
  changed_at: number;
}

export interface JobsDatabase extends EventStoreTables {
  job_views: JobViewTable;
  org_plans: OrgPlanTable;
  dispatch_resends: DispatchResendTable;
  unqueued_dispatches: UnqueuedDispatchTable;
  job_holds: JobHoldTable;
  batch_views: BatchViewTable;
  idempotency_keys: IdempotencyKeyTable;
  webhook_deliveries: WebhookDeliveryTable;
}
