import { createServer } from "node:http";
import type { Registry } from "prom-client";

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/**
 * A tiny HTTP server for services without a public HTTP port (jobs, worker, auth's internal side): Prometheus
 * `/metrics`, a liveness `/healthz` and a readiness `/readyz` (503 while `isReady` says no; 200 without one).
 * Port 0 picks a free port (tests read it from the "metrics listening" line).
 */
export async function startMetricsServer(registry: Registry, port: number, host = "0.0.0.0", isReady?: () => boolean): Promise<MetricsServer> {
  const server = createServer((request, response) => {
    const path = (request.url ?? "/").split("?")[0];
    if (path === "/healthz") return void response.writeHead(200, { "content-type": "application/json" }).end('{"data":{"status":"ok"}}');
    if (path === "/readyz") {
      if (isReady === undefined || isReady()) return void response.writeHead(200, { "content-type": "application/json" }).end('{"data":{"status":"ready"}}');
      return void response
        .writeHead(503, { "content-type": "application/json" })
        .end('{"error":{"code":"SERVICE_UNAVAILABLE","message":"Not ready to take work"}}');
    }
    if (path !== "/metrics") return void response.writeHead(404).end();
    registry.metrics().then(
      (text) => response.writeHead(200, { "content-type": registry.contentType }).end(text),
      () => response.writeHead(500).end(),
    );
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => resolve());
  });
  return {
    port: (server.address() as { port: number }).port,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}
