import { Gauge, Registry, collectDefaultMetrics } from "prom-client";

export { Counter, Histogram, Gauge, Registry } from "prom-client";

/** One Prometheus registry per process, with Node's default metrics, labelled with the service name. */
export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
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
