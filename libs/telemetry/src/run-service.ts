import type { Registry } from "prom-client";
import { createLogger, type Logger } from "./logger.js";
import { Counter, createMetricsRegistry } from "./metrics.js";
import { startMetricsServer, type MetricsServer } from "./metrics-server.js";
import { startTracing } from "./tracing.js";

interface ServiceConfig {
  LOG_LEVEL: string;
  OTEL_EXPORTER_OTLP_ENDPOINT?: string | undefined;
  /** How long a stop on SIGTERM/SIGINT may take before the process exits anyway (default in common-config.ts). */
  SHUTDOWN_TIMEOUT_MS: number;
}

/** What every service's start function receives. */
export interface ServiceDeps {
  logger: Logger;
  /** The process's Prometheus registry (Node defaults included); services add their own metrics to it. */
  metrics: Registry;
}

interface StartedService {
  stop(): Promise<void>;
  /**
   * Called synchronously on an uncaught exception or unhandled rejection, still inside the failing callback's async
   * context (an AsyncLocalStorage store is readable): fields for the fatal log line, e.g. the job id.
   */
  fatalContext?(error: unknown): Record<string, unknown>;
  /**
   * Best-effort cleanup before a fatal exit, e.g. the worker reporting the job that crashed it as failed. Called right
   * after {@link StartedService.fatalContext}; the process exits after FATAL_CLEANUP_TIMEOUT_MS whether or not it
   * settled.
   */
  onFatal?(error: unknown): Promise<void>;
  /** Set by services that serve `/metrics` themselves (the gateway on its HTTP port, the dispatcher on its own). */
  metricsPort?: number | undefined;
  /** Answers the metrics server's `/readyz` (the worker: connected to NATS and taking work); always ready without. */
  isReady?(): boolean;
  /** The registry to serve instead of the one runService created (a service that builds its own). */
  metricsRegistry?: Registry;
}

/** `WEBHOOK_DISPATCHER_METRICS_PORT`, else `METRICS_PORT`: one machine running every service needs distinct ports. */
export function metricsPortFromEnv(service: string, env: NodeJS.ProcessEnv): number | undefined {
  const value = env[`${service.toUpperCase().replace(/-/g, "_")}_METRICS_PORT`] || env.METRICS_PORT;
  return value ? Number(value) : undefined;
}

/** How long a service's {@link StartedService.onFatal} may take before the process exits anyway. */
export const FATAL_CLEANUP_TIMEOUT_MS = 3000;

/** The exit code after an uncaught exception or unhandled rejection (EX_SOFTWARE), for the supervisor to restart. */
export const FATAL_EXIT_CODE = 70;

/** The exit code of a configuration a service refuses (EX_CONFIG), as @renderbus/config's loadConfigOrExit exits. */
export const CONFIG_EXIT_CODE = 78;

/**
 * The body of every service's `main.ts`: starts tracing and logging, starts the service, serves Prometheus metrics
 * on `<SERVICE>_METRICS_PORT` or `METRICS_PORT` (when set and the service does not serve them itself), and on SIGTERM/SIGINT stops it once (the
 * service stops taking work, drains in-flight work and acks nothing unfinished), flushes traces and exits. A failed
 * shutdown, or one still running after SHUTDOWN_TIMEOUT_MS, exits non-zero so the orchestrator notices.
 *
 * An uncaught exception or unhandled rejection is fatal (the process state is unknown after one): it is logged at
 * `fatal` with the service's context (the job id if the service knows it), counted in `process_fatal_errors_total`,
 * the service gets a short, bounded chance to clean up (`onFatal`), and the process exits with FATAL_EXIT_CODE.
 */
export async function runService<C extends ServiceConfig>(
  name: string,
  config: C,
  start: (config: C, deps: ServiceDeps) => Promise<StartedService>,
  env: NodeJS.ProcessEnv = process.env,
): Promise<void> {
  const tracing = await startTracing({ service: name, otlpEndpoint: config.OTEL_EXPORTER_OTLP_ENDPOINT });
  const logger = createLogger({ service: name, level: config.LOG_LEVEL });
  const metrics = createMetricsRegistry(name);
  const fatalErrors = new Counter({
    name: "process_fatal_errors_total",
    help: "Uncaught exceptions and unhandled rejections, each of which ends the process",
    labelNames: ["origin"],
    registers: [metrics],
  });
  let service: StartedService | undefined = undefined;
  let dying = false;
  const fatal = (error: unknown, origin: string) => {
    if (dying) {
      logger.error({ err: error, origin }, "another uncaught error while exiting");
      return;
    }
    dying = true;
    let context: Record<string, unknown> = {};
    let cleanup: Promise<void> | undefined;
    try {
      context = service?.fatalContext?.(error) ?? {};
      cleanup = service?.onFatal?.(error);
    } catch (hookError) {
      logger.error({ err: hookError }, "fatal-error hook failed");
    }
    logger.fatal({ err: error, origin, ...context }, "uncaught error; the process exits");
    fatalErrors.inc({ origin });
    // Non-zero even if the event loop empties first; the timers are not unref'd so that it cannot.
    process.exitCode = FATAL_EXIT_CODE;
    const exit = () => logger.flush(() => process.exit(FATAL_EXIT_CODE));
    setTimeout(() => process.exit(FATAL_EXIT_CODE), FATAL_CLEANUP_TIMEOUT_MS + 1000);
    const deadline = new Promise<void>((resolve) => setTimeout(resolve, FATAL_CLEANUP_TIMEOUT_MS));
    Promise.race([(cleanup ?? Promise.resolve()).catch((cleanupError: unknown) => logger.error({ err: cleanupError }, "cleanup after a fatal error failed")), deadline])
      .finally(exit);
  };
  process.on("uncaughtException", (error, origin) => fatal(error, origin));
  process.on("unhandledRejection", (reason) => fatal(reason, "unhandledRejection"));
  try {
    service = await start(config, { logger, metrics });
  } catch (error) {
    // Settings checked only when the service builds what uses them (call-token keys, the gRPC transport's files) end
    // the start the way the config loader's checks do: their message and EX_CONFIG, not a crash to be restarted.
    // Known by name: @renderbus/config's ConfigError, without this library depending on it.
    if (error instanceof Error && error.name === "ConfigError") {
      process.stderr.write(`${name}: ${error.message}\n`);
      logger.flush(() => process.exit(CONFIG_EXIT_CODE));
      return;
    }
    throw error;
  }
  const started = service;
  let metricsServer: MetricsServer | undefined;
  const metricsPort = metricsPortFromEnv(name, env);
  if (metricsPort !== undefined && started.metricsPort === undefined) {
    metricsServer = await startMetricsServer(started.metricsRegistry ?? metrics, metricsPort, env.METRICS_HOST || undefined, started.isReady?.bind(started));
    logger.info({ metricsPort: metricsServer.port }, "metrics listening");
  }
  let stopping = false;
  const shutdown = (signal: NodeJS.Signals) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, "shutting down");
    // A stop that waits on something gone (a broker or database stopped first) must not keep the process forever.
    const timeoutMs = config.SHUTDOWN_TIMEOUT_MS;
    setTimeout(() => {
      logger.error({ timeoutMs }, "shutdown did not finish in time (SHUTDOWN_TIMEOUT_MS); exiting");
      logger.flush(() => process.exit(1));
    }, timeoutMs).unref();
    started
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
