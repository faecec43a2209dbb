import type { DestinationStream } from "pino";
import type { FastifyInstance } from "fastify";
import { AppError } from "@renderbus/errors";
import { loadPlans } from "@renderbus/plans";
import { createLogger, createMetricsRegistry } from "@renderbus/telemetry";
import { buildApp } from "../app.js";
import { gatewayConfigSchema } from "../config.js";
import type { GatewayDeps } from "../deps.js";

/**
 * The gateway app over dependencies that do nothing: every credential is refused (401), and `overrides` replace
 * parts that a test needs to act (an output store that fails, a logger stream to read). Enough for what happens
 * before a request reaches a service: body parsing, validation, error mapping and logging.
 */
export async function inertGatewayApp(
  overrides: Partial<GatewayDeps> = {},
  { logDestination, addRoutes }: { logDestination?: DestinationStream; addRoutes?: (app: FastifyInstance) => void } = {},
): Promise<FastifyInstance> {
  const deps = {
    config: gatewayConfigSchema.parse({}),
    logger: createLogger({ service: "gateway-test", level: logDestination ? "info" : "silent", ...(logDestination ? { destination: logDestination } : {}) }),
    plans: loadPlans(undefined),
    metrics: createMetricsRegistry("gateway-test"),
    jobEvents: { close: () => undefined },
    bus: { listen: () => () => undefined, notify: () => undefined },
    // Limiters register their Lua scripts at start-up; no command ever runs here.
    redis: { defineCommand: () => undefined, status: "ready" },
    credentials: {
      resolve: async () => {
        throw new AppError("UNAUTHORIZED", "Authentication is invalid or expired");
      },
    },
    ...overrides,
  } as unknown as GatewayDeps;
  const app = await buildApp(deps);
  addRoutes?.(app);
  await app.ready();
  return app;
}
