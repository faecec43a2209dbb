import { Counter, Gauge, Histogram, createMetricsRegistry, type Registry } from "@renderbus/telemetry";

/** The dispatcher's Prometheus metrics (one registry per service instance). */
export interface DispatcherMetrics {
  registry: Registry;
  /** Deliveries reaching a final state, by outcome (succeeded / failed). */
  deliveries: Counter<"outcome">;
  /** Attempts by result (success / failure). */
  attempts: Counter<"result">;
  attemptLatency: Histogram<"result">;
  /** From the job event's time to the first attempt's start: the latency users feel. */
  eventToFirstAttempt: Histogram;
}

export function createDispatcherMetrics(pendingRetries: () => Promise<number>): DispatcherMetrics {
  const registry = createMetricsRegistry("webhook-dispatcher");
  const buckets = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
  new Gauge({
    name: "webhook_pending_retries",
    help: "Deliveries waiting for a retry after a failed attempt",
    registers: [registry],
    async collect() {
      this.set(await pendingRetries().catch(() => 0));
    },
  });
  return {
    registry,
    deliveries: new Counter({ name: "webhook_deliveries_total", help: "Deliveries finished, by outcome", labelNames: ["outcome"], registers: [registry] }),
    attempts: new Counter({ name: "webhook_attempts_total", help: "Delivery attempts, by result", labelNames: ["result"], registers: [registry] }),
    attemptLatency: new Histogram({ name: "webhook_attempt_duration_seconds", help: "Duration of delivery attempts", labelNames: ["result"], buckets, registers: [registry] }),
    eventToFirstAttempt: new Histogram({ name: "webhook_event_to_first_attempt_seconds", help: "Lag from a job event to the first attempt of its delivery", buckets, registers: [registry] }),
  };
}
