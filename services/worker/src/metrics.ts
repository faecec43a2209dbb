import { STREAMS, type Bus } from "@renderbus/bus";
import { Counter, registerGaugeReader, type Registry } from "@renderbus/telemetry";
import { WORKERS_DURABLE } from "./dispatch/consume-dispatches.js";

/** The worker's Prometheus metrics. */
export interface WorkerMetrics {
  /** Dispatches handled by this replica, by outcome (completed / failed / cancelled / retried / error / dead_lettered). */
  dispatches: Counter<"outcome">;
}

/**
 * - `jobs_dispatch_queue_depth`: work in the `workers` durable not yet acknowledged (pending + in progress), read
 *   from JetStream at scrape time; the signal the worker's autoscaler follows.
 * - `worker_dispatches_total{outcome}`: what happened to each dispatch this replica took.
 */
export function registerWorkerMetrics(registry: Registry, bus: Bus): WorkerMetrics {
  registerGaugeReader(registry, { name: "jobs_dispatch_queue_depth", help: "Dispatched jobs waiting for or held by a worker" }, async () => {
    const info = await bus.jsm.consumers.info(bus.streamName(STREAMS.jobDispatch), WORKERS_DURABLE);
    return info.num_pending + info.num_ack_pending;
  });
  return {
    dispatches: new Counter({ name: "worker_dispatches_total", help: "Dispatches handled, by outcome", labelNames: ["outcome"], registers: [registry] }),
  };
}
