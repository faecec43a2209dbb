import { describe, expect, it } from "vitest";
import { Counter } from "prom-client";
import { createMetricsRegistry, registerGaugeReader } from "./metrics.js";
import { startMetricsServer } from "./metrics-server.js";
import { metricsPortFromEnv } from "./run-service.js";

describe("the metrics server of services without an HTTP port", () => {
  it("serves the registry at /metrics (with the service label and scrape-time gauges) and answers /healthz", async () => {
    const registry = createMetricsRegistry("jobs");
    new Counter({ name: "things_total", help: "things", registers: [registry] }).inc(3);
    registerGaugeReader(registry, { name: "queue_depth", help: "depth" }, async () => 7);
    registerGaugeReader(registry, { name: "by_status", help: "per status" }, async () => ({ waiting: 2, running: 1 }), "status");
    const server = await startMetricsServer(registry, 0, "127.0.0.1");
    try {
      const metrics = await fetch(`http://127.0.0.1:${server.port}/metrics`);
      expect(metrics.status).toBe(200);
      const text = await metrics.text();
      expect(text).toContain('things_total{service="jobs"} 3');
      expect(text).toContain('queue_depth{service="jobs"} 7');
      expect(text).toContain('by_status{status="waiting",service="jobs"} 2');
      expect(text).toContain("process_cpu_seconds_total");
      expect((await fetch(`http://127.0.0.1:${server.port}/healthz`)).status).toBe(200);
      expect((await fetch(`http://127.0.0.1:${server.port}/other`)).status).toBe(404);
    } finally {
      await server.close();
    }
  });

  it("answers /readyz with 503 while the service says it is not ready, and 200 once it is", async () => {
    let ready = false;
    const server = await startMetricsServer(createMetricsRegistry("worker"), 0, "127.0.0.1", () => ready);
    try {
      const before = await fetch(`http://127.0.0.1:${server.port}/readyz`);
      expect(before.status).toBe(503);
      expect(((await before.json()) as { error: { code: string } }).error.code).toBe("SERVICE_UNAVAILABLE");
      expect((await fetch(`http://127.0.0.1:${server.port}/healthz`)).status).toBe(200);
      ready = true;
      expect((await fetch(`http://127.0.0.1:${server.port}/readyz`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });

  it("takes the port from <SERVICE>_METRICS_PORT, else METRICS_PORT", () => {
    expect(metricsPortFromEnv("webhook-dispatcher", { WEBHOOK_DISPATCHER_METRICS_PORT: "9470", METRICS_PORT: "9464" })).toBe(9470);
    expect(metricsPortFromEnv("jobs", { METRICS_PORT: "9464" })).toBe(9464);
    expect(metricsPortFromEnv("jobs", {})).toBeUndefined();
  });
});
