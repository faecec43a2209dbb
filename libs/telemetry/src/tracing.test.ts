import { createServer } from "node:http";
import { metrics } from "@opentelemetry/api";
import { afterAll, describe, expect, it } from "vitest";
import { startTracing, tracer } from "./tracing.js";

describe("startTracing", () => {
  const received: string[] = [];
  const collector = createServer((request, response) => {
    received.push(request.url ?? "");
    request.resume();
    request.on("end", () => response.writeHead(200, { "content-type": "application/json" }).end("{}"));
  });

  afterAll(() => new Promise<void>((done) => collector.close(() => done())));

  it("exports spans and metrics over OTLP/HTTP to the configured endpoint", async () => {
    await new Promise<void>((done) => collector.listen(0, "127.0.0.1", done));
    const { port } = collector.address() as { port: number };
    const telemetry = startTracing({ service: "test", otlpEndpoint: `http://127.0.0.1:${port}` });
    tracer().startActiveSpan("unit of work", (span) => span.end());
    metrics.getMeter("test").createCounter("things_done").add(1);
    await telemetry.shutdown(); // flushes both exporters
    expect(received).toContain("/v1/traces");
    expect(received).toContain("/v1/metrics");
  });
});
