import type { webhooks } from "@renderbus/contracts";
import { nextAttemptOf, type AttemptRow, type DeliveryRow } from "../deliveries/delivery.js";

/** A stored delivery as the gRPC `Delivery` message. */
export function toDeliveryMessage(row: DeliveryRow, attempts: AttemptRow[] = []): webhooks.Delivery {
  return {
    id: row.id,
    orgId: row.org_id,
    event: row.event,
    jobId: row.job_id ?? undefined,
    batchId: row.batch_id ?? undefined,
    status: row.status,
    attempts: row.attempts,
    lastAttemptAt: row.last_attempt_at ?? undefined,
    nextAttemptAt: nextAttemptOf(row) ?? undefined,
    lastResponseStatus: row.last_response_status ?? undefined,
    lastError: row.last_error ?? undefined,
    url: row.url,
    createdAt: row.created_at,
    endpointId: row.endpoint_id,
    body: row.body,
    attemptLog: attempts.map((attempt) => ({
      attempt: attempt.attempt,
      startedAt: attempt.started_at,
      responseStatus: attempt.response_status ?? undefined,
      error: attempt.error ?? undefined,
      latencyMs: attempt.latency_ms,
      responseExcerpt: attempt.response_excerpt ?? undefined,
      requestHeaders: attempt.request_headers ?? {},
      responseHeaders: attempt.response_headers ?? {},
    })),
  };
}
