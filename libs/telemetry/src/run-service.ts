import type { Registry } from "prom-client";
import { createLogger, type Logger } from "./logger.js";
import { createMetricsRegistry } from "./metrics.js";
import { startMetricsServer, type MetricsServer } from "./metrics-server.js";
import { startTracing } from "./tracing.js";

interface ServiceConfig {
  LOG_LEVEL: string;
  OTEL_EXPORTER_OTLP_ENDPOINT?: string | undefined;
}

/** What every service's start function receives. */
export interface ServiceDeps {
  logger: Logger;
  /** The process's Prometheus registry (Node defaults included); services add their own metrics to it. */
  metrics: Registry;
}

interface StartedService {
  stop(): Promise<void>;
  /** Set by services that serve `/metrics` themselves (the gateway on its HTTP port, the dispatcher on its own). */
  metricsPort?: number | undefined;
  /** The registry to serve instead of the one runService created (a service that builds its own). */
  metricsRegistry?: Registry;
}

/** `WEBHOOK_DISPATCHER_METRICS_PORT`, else `METRICS_PORT`: one machine running every service needs distinct ports. */
export function metricsPortFromEnv(service: string, env: NodeJS.ProcessEnv): number | undefined {
  const value = env[`${service.toUpperCase().replace(/-/g, "_")}_METRICS_PORT`] || env.METRICS_PORT;
  return value ? Number(value) : undefined;
}

/**
 * The body of every service's `main.ts`: starts tracing and logging, starts the service, serves Prometheus metrics
 * on `<SERVICE>_METRICS_PORT` or `METRICS_PORT` (when set and the service does not serve them itself), and on SIGTERM/SIGINT stops it once (the
 * service stops taking work, drains in-flight work and acks nothing unfinished), flushes traces and exits. A failed
 * shutdown exits non-zero so the orchestrator notices.
 */
export async function runService<C extends ServiceConfig>(
  name: string,
  config: C,
  start: (config: C, deps: ServiceDeps) => Promise<StartedService>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const tracing = startTracing({ service: name, otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT });
  const logger = createLogger({ service: name, level: config.LOG_LEVEL });
  const metrics = createMetricsRegistry(name);
  const service = await start(config, { logger, metrics });
  let metricsServer: MetricsServer | undefined;
  const metricsPort = metricsPortFromEnv(name, env);
  if (metricsPort !== undefined && service.metricsPort === undefined) {
    metricsServer = await startMetricsServer(service.metricsRegistry ?? metrics, metricsPort, env.METRICS_HOST || undefined);
    logger.info({ metricsPort: metricsServer.port }, "metrics listening");
  }
  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    service
      .stop()
      .then(() => metricsServer?.close())
      .then(() => tracing.shutdown())
      .then(
        () => logger.flush(() => process.exit(0)),
        (error: unknown) => {
          logger.error({ err: error }, "shutdown failed");
          process.exit(1);
        },
      );
  };
  process.on("SIGTERM", shutdown);
  process.on("SIGINT", shutdown);
}
