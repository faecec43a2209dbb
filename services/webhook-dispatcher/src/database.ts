import type { ColumnType } from "kysely";
import type { EventStoreTables } from "@renderbus/db";

/** Delivery states: pending, succeeded, failed, skipped (created while its endpoint was disabled; docs/webhooks.md). */
export type DeliveryStatus = "pending" | "succeeded" | "failed" | "skipped";

/** Row types of the `dispatcher` schema (see migrations/index.ts). */
export interface DispatcherTables extends EventStoreTables {
  deliveries: {
    id: string;
    org_id: string;
    event: string;
    /** Id of the job/batch event that caused the delivery: makes redelivered events create nothing new. */
    source_event_id: string | null;
    job_id: string | null;
    batch_id: string | null;
    url: string;
    /** The exact JSON bytes sent (and signed) on every attempt. */
    body: string;
    status: DeliveryStatus;
    attempts: number;
    /** Attempts of the current chain (a manual retry starts a new chain); drives the retry schedule. */
    chain_attempts: number;
    next_attempt_at: number | null;
    lease_until: number | null;
    lease_token: string | null;
    last_attempt_at: number | null;
    last_response_status: number | null;
    last_error: string | null;
    /** When the source event happened: the start of the event-to-first-attempt lag. */
    event_at: number;
    first_attempt_at: number | null;
    created_at: number;
    /** W3C trace context (JSON) of the job event that caused the delivery: every attempt is a span of that trace. */
    trace_headers: ColumnType<string | null, string | null | undefined, string | null>;
    /** Whether a DeliveryUpdated went out for this delivery (false only until its first attempt or the waiting sweep). */
    announced: ColumnType<boolean, boolean | undefined, boolean>;
    /** The endpoint it goes to (`ep_default`: the org's webhookUrl). */
    endpoint_id: ColumnType<string, string | undefined, string>;
    /** Place in its FIFO endpoint's queue (per endpoint, from 1, without gaps); null for other endpoints. */
    sequence: ColumnType<number | null, number | null | undefined, number | null>;
  };
  /** Per endpoint: FIFO sequence counter and rate-limit slot (src/deliveries/endpoint-flow.ts). */
  endpoint_queues: {
    org_id: string;
    endpoint_id: string;
    last_sequence: ColumnType<number, number | undefined, number>;
    /** When the next attempt may start, in ms of PostgreSQL's clock (fractional). */
    next_slot_at: ColumnType<number, number | undefined, number>;
  };
  /**
   * When each endpoint last got a `job.progress` delivery for each job, in ms of PostgreSQL's clock: the throttle of
   * progress webhooks across replicas (src/ingest/job-progress.listener.ts).
   */
  progress_throttle: {
    org_id: string;
    endpoint_id: string;
    job_id: string;
    last_sent_at: number;
  };
  endpoints: {
    org_id: string;
    /** `ep_...`, or `ep_default` (settings of the org's webhookUrl; its URL and secret are the auth service's). */
    id: string;
    /** Null for `ep_default`. */
    url: string | null;
    description: string;
    /** Event names, or `["*"]`. */
    events: string[];
    enabled: boolean;
    disabled_reason: string | null;
    disabled_at: number | null;
    ordering: "none" | "fifo";
    rate_limit_per_second: number | null;
    retry_schedule: "seed" | "extended";
    /** Sealed with libs/secret-box, the org id as context; null for `ep_default`. */
    secret_sealed: string | null;
    /** The secret before the last rotation, signing beside the new one until `previous_secret_expires_at`. */
    previous_secret_sealed: string | null;
    previous_secret_expires_at: number | null;
    last_recover_at: number | null;
    created_at: number;
    updated_at: number;
  };
  delivery_attempts: {
    delivery_id: string;
    attempt: number;
    started_at: number;
    response_status: number | null;
    error: string | null;
    latency_ms: number;
    response_excerpt: string | null;
    /** Without signature headers; null for attempts recorded before they were kept. */
    request_headers: Record<string, string> | null;
    response_headers: Record<string, string> | null;
    /** A rate-limited endpoint's start slot the attempt waited for (as slotStart gave it); null without a limit. */
    slot_at: number | null;
  };
  batches: {
    batch_id: string;
    org_id: string;
    job_count: number;
    created_at: number;
    completed_at: number | null;
  };
  batch_terminal_jobs: {
    batch_id: string;
    job_id: string;
    outcome: "completed" | "failed" | "cancelled";
    recorded_at: number;
  };
  processed_events: {
    event_id: string;
    processed_at: number;
  };
}

/** The schema every dispatcher query runs in. */
export const DISPATCHER_SCHEMA = "dispatcher";
