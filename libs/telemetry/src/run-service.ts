import { createLogger, type Logger } from "./logger.js";
import { startTracing } from "./tracing.js";

interface ServiceConfig {
  LOG_LEVEL: string;
  OTEL_EXPORTER_OTLP_ENDPOINT?: string | undefined;
}

/**
 * The body of every service's `main.ts`: starts tracing and logging, starts the service, and on SIGTERM/SIGINT
 * stops it once (the service stops taking work, drains in-flight work and acks nothing unfinished), flushes
 * traces and exits. A failed shutdown exits non-zero so the orchestrator notices.
 */
export async function runService<C extends ServiceConfig>(
  name: string,
  config: C,
  start: (config: C, deps: { logger: Logger }) => Promise<{ stop(): Promise<void> }>,
): Promise<void> {
  const tracing = startTracing({ service: name, otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT });
  const logger = createLogger({ service: name, level: config.LOG_LEVEL });
  const service = await start(config, { logger });
  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    service
      .stop()
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
