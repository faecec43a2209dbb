import { Registry, collectDefaultMetrics } from "prom-client";

export { Counter, Histogram, Gauge, Registry } from "prom-client";

/** One Prometheus registry per process, with Node's default metrics, labelled with the service name. */
export function createMetricsRegistry(service: string): Registry {
  const registry = new Registry();
  registry.setDefaultLabels({ service });
  collectDefaultMetrics({ register: registry });
  return registry;
}
