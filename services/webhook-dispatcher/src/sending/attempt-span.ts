import { SpanKind, SpanStatusCode, contextFromTraceHeaders, tracer } from "@renderbus/telemetry";
import type { DeliveryRow } from "../deliveries/delivery.js";

/**
 * Runs one delivery attempt as a CLIENT span of the trace that caused the delivery (the context stored with the
 * row), so a job's trace shows every webhook attempt, including retries sent minutes later by another replica.
 */
export function traceAttempt(row: DeliveryRow, run: () => Promise<DeliveryRow | undefined>): Promise<DeliveryRow | undefined> {
  let stored: Record<string, string> = {};
  try {
    stored = row.trace_headers ? (JSON.parse(row.trace_headers) as Record<string, string>) : {};
  } catch {
    // A malformed context only costs the link to the job's trace.
  }
  return tracer().startActiveSpan(
    `webhook attempt ${row.event}`,
    { kind: SpanKind.CLIENT, attributes: { "renderbus.delivery_id": row.id, "renderbus.event": row.event, "renderbus.attempt": row.attempts + 1 } },
    contextFromTraceHeaders(stored),
    async (span) => {
      try {
        const updated = await run();
        if (updated?.last_response_status) span.setAttribute("http.response.status_code", updated.last_response_status);
        if (updated?.last_error) span.setStatus({ code: SpanStatusCode.ERROR, message: updated.last_error });
        return updated;
      } catch (error) {
        span.setStatus({ code: SpanStatusCode.ERROR });
        throw error;
      } finally {
        span.end();
      }
    },
  );
}
