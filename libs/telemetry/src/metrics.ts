import { Gauge, Registry, collectDefaultMetrics } from "prom-client";

export { Counter, Histogram, Gauge, Registry } from "prom-client";

/** How often the event loop's delay is sampled for `nodejs_eventloop_lag_*` (ms). */
export const EVENT_LOOP_MONITORING_PRECISION_MS = 100;

/** One Prometheus registry per process, with Node's default metrics, labelled with the service name. */
export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  // prom-client samples the event loop's delay every 10 ms by default: a timer wake-up 100 times a second in every
  // process, a measurable share of an idle service's CPU and of a replica's under a small CPU cap. Ten samples a second
  // still give a scrape interval's lag percentiles (a delay is measured however far apart the samples are).
  collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: EVENT_LOOP_MONITORING_PRECISION_MS });
  return registry;
}

/**
 * Registers a gauge whose value is read at scrape time (a queue's backlog, a table count). A failed read reports
 * nothing for that scrape rather than a misleading zero.
 */
export function registerGaugeReader(
  registry: Registry,
  metric: { name: string; help: string },
  read: () => Promise<number | Record<string, number>>,
  labelName?: string,
): void {
  new Gauge({
    ...metric,
    labelNames: labelName ? [labelName] : [],
    registers: [registry],
    async collect() {
      const value = await read().catch(() => undefined);
      if (value === undefined) return;
      this.reset();
      if (typeof value === "number") this.set(value);
      else for (const [label, count] of Object.entries(value)) this.set({ [labelName!]: label }, count);
    },
  });
}
