import type { FastifyInstance } from "fastify";
import { isRpcServing } from "@renderbus/rpc";
import type { GatewayDeps } from "../deps.js";

/** Liveness (the process answers) and readiness (every dependency it needs answers). */
export function registerHealthRoutes(app: FastifyInstance, deps: GatewayDeps): void {
  app.get("/healthz", async () => ({ data: { status: "ok" } }));
  app.get("/readyz", async (_request, reply) => {
    const checks = {
      auth: await isRpcServing(deps.config.AUTH_GRPC_ADDRESS),
      jobs: await isRpcServing(deps.config.JOBS_GRPC_ADDRESS),
      webhooks: await isRpcServing(deps.config.WEBHOOKS_GRPC_ADDRESS),
      nats: !deps.bus.nc.isClosed() && !deps.bus.nc.isDraining(),
      redis: deps.redis.status === "ready",
    };
    const ready = Object.values(checks).every(Boolean);
    if (!ready) {
      return reply.status(503).send({ error: { code: "SERVICE_UNAVAILABLE", message: "A dependency is unavailable" }, checks });
    }
    return { data: { status: "ready", checks } };
  });
  app.get("/metrics", async (_request, reply) => reply.type("text/plain; version=0.0.4").send(await deps.metrics.metrics()));
}
