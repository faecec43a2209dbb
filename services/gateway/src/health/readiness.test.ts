import { createServer as createHttpServer } from "node:http";
import { createConnection, createServer as createTcpServer, type Server as TcpServer } from "node:net";
import { Server, ServerCredentials, type sendUnaryData, type ServerUnaryCall } from "@grpc/grpc-js";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { HealthImplementation } from "grpc-health-check";
import { gatewayConfigSchema } from "../config.js";
import type { GatewayDeps } from "../deps.js";
import { inertGatewayApp } from "../http/inert-gateway.test-support.js";
import { READINESS_CACHE_MS } from "./readiness.js";

/** A gRPC health server reached through a TCP relay that counts the connections made to it. */
async function countedHealthServer() {
  const counts = { checks: 0, connections: 0 };
  const grpc = new Server();
  // The standard health service, as every Renderbus gRPC server runs it, with its Check calls counted.
  const addService = grpc.addService.bind(grpc);
  grpc.addService = (service, implementation) => {
    const check = implementation.check as (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => void;
    addService(service, {
      ...implementation,
      check: (call: ServerUnaryCall<unknown, unknown>, callback: sendUnaryData<unknown>) => {
        counts.checks += 1;
        check(call, callback);
      },
    });
  };
  new HealthImplementation({ "": "SERVING" }).addToServer(grpc);
  const grpcPort = await new Promise<number>((resolve, reject) => grpc.bindAsync("127.0.0.1:0", ServerCredentials.createInsecure(), (error, port) => (error ? reject(error) : resolve(port))));
  const relay: TcpServer = createTcpServer((client) => {
    counts.connections += 1;
    const upstream = createConnection(grpcPort, "127.0.0.1");
    client.pipe(upstream).pipe(client);
    client.on("error", () => upstream.destroy());
    upstream.on("error", () => client.destroy());
  });
  await new Promise<void>((resolve) => relay.listen(0, "127.0.0.1", resolve));
  return {
    address: `127.0.0.1:${(relay.address() as { port: number }).port}`,
    counts,
    close: async () => {
      relay.close();
      await new Promise<void>((resolve) => grpc.tryShutdown(() => resolve()));
    },
  };
}

describe("GET /readyz (SECURITY-AUDIT finding 13)", () => {
  let servers: Awaited<ReturnType<typeof countedHealthServer>>[];

  beforeAll(async () => {
    servers = await Promise.all([countedHealthServer(), countedHealthServer(), countedHealthServer()]);
  });
  afterAll(async () => {
    await Promise.all(servers.map((server) => server.close()));
  });

  const readyApp = () => {
    const [auth, jobs, webhooks] = servers.map((server) => server.address);
    const config = gatewayConfigSchema.parse({ AUTH_GRPC_ADDRESS: auth, JOBS_GRPC_ADDRESS: jobs, WEBHOOKS_GRPC_ADDRESS: webhooks });
    const connected = { nc: { isClosed: () => false, isDraining: () => false }, listen: () => () => undefined };
    return inertGatewayApp({ config, bus: connected as unknown as GatewayDeps["bus"], redis: { status: "ready", defineCommand: () => undefined } as unknown as GatewayDeps["redis"] });
  };

  it("answers a flood from one round of health checks, and later rounds over the same channels", async () => {
    const app = await readyApp();
    const flood = await Promise.all(Array.from({ length: 50 }, () => app.inject({ url: "/readyz" })));
    for (const response of flood) {
      expect(response.statusCode).toBe(200);
      expect(response.json()).toEqual({ data: { status: "ready", checks: { auth: true, jobs: true, webhooks: true, http: true, nats: true, redis: true } } });
    }
    for (const server of servers) expect(server.counts).toEqual({ checks: 1, connections: 1 });

    // Once the cached answer is older than about a second, the next request checks again, on the open channels.
    await new Promise((resolve) => setTimeout(resolve, READINESS_CACHE_MS + 100));
    for (let round = 0; round < 3; round++) expect((await app.inject({ url: "/readyz" })).statusCode).toBe(200);
    for (const server of servers) expect(server.counts).toEqual({ checks: 2, connections: 1 });
    await app.close();
  });

  it("says which dependency is down with 503", async () => {
    const config = gatewayConfigSchema.parse({ AUTH_GRPC_ADDRESS: servers[0]!.address, JOBS_GRPC_ADDRESS: "127.0.0.1:1", WEBHOOKS_GRPC_ADDRESS: servers[2]!.address });
    const connected = { nc: { isClosed: () => false, isDraining: () => false }, listen: () => () => undefined };
    const app = await inertGatewayApp({ config, bus: connected as unknown as GatewayDeps["bus"], redis: { status: "reconnecting", defineCommand: () => undefined } as unknown as GatewayDeps["redis"] });
    const response = await app.inject({ url: "/readyz" });
    expect(response.statusCode).toBe(503);
    expect(response.json()).toMatchObject({ error: { code: "SERVICE_UNAVAILABLE" }, checks: { auth: true, jobs: false, webhooks: true, nats: true, redis: false } });
    await app.close();
  });

  it("is not ready while an extra HTTP dependency (npm start's worker /readyz) does not answer 2xx", async () => {
    let workerReady = false;
    const worker = createHttpServer((_request, response) => response.writeHead(workerReady ? 200 : 503).end());
    await new Promise<void>((resolve) => worker.listen(0, "127.0.0.1", resolve));
    const [auth, jobs, webhooks] = servers.map((server) => server.address);
    const workerUrl = `http://127.0.0.1:${(worker.address() as { port: number }).port}/readyz`;
    const config = gatewayConfigSchema.parse({ AUTH_GRPC_ADDRESS: auth, JOBS_GRPC_ADDRESS: jobs, WEBHOOKS_GRPC_ADDRESS: webhooks, READYZ_HTTP_DEPENDENCIES: workerUrl });
    const connected = { nc: { isClosed: () => false, isDraining: () => false }, listen: () => () => undefined };
    const app = await inertGatewayApp({ config, bus: connected as unknown as GatewayDeps["bus"], redis: { status: "ready", defineCommand: () => undefined } as unknown as GatewayDeps["redis"] });
    const down = await app.inject({ url: "/readyz" });
    expect(down.statusCode).toBe(503);
    expect(down.json()).toMatchObject({ checks: { http: false } });
    workerReady = true;
    await new Promise((resolve) => setTimeout(resolve, READINESS_CACHE_MS + 100));
    expect((await app.inject({ url: "/readyz" })).statusCode).toBe(200);
    await app.close();
    worker.close();
  });

  it("does not serve /metrics on the public listener", async () => {
    const app = await readyApp();
    const response = await app.inject({ url: "/metrics" });
    expect(response.statusCode).toBe(404);
    expect(response.json()).toMatchObject({ error: { code: "NOT_FOUND" } });
    await app.close();
  });
});
