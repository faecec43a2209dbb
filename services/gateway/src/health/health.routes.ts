import type { FastifyInstance } from "fastify";
import type { GatewayDeps } from "../deps.js";
import { Readiness } from "./readiness.js";

/**
 * Liveness (the process answers) and readiness (every dependency it needs answers, cached for about a second).
 * Prometheus `/metrics` is not here: it is served on GATEWAY_METRICS_PORT, off the public listener (service.ts).
 */
export function registerHealthRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  const readiness = new Readiness(deps);
  app.addHook("onClose", async () => readiness.close());
  app.get("/healthz", async () => ({ data: { status: "ok" } }));
  app.get("/readyz", async (_request, reply) => {
    const checks = await readiness.check();
    const ready = Object.values(checks).every(Boolean);
    if (!ready) {
      return reply.status(503).send({ error: { code: "SERVICE_UNAVAILABLE", message: "A dependency is unavailable" }, checks });
    }
    return { data: { status: "ready", checks } };
  });
}
