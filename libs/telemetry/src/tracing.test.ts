import { createServer } from "node:http";
import { join } from "node:path";
import { metrics } from "@opentelemetry/api";
import { build } from "esbuild";
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
    const telemetry = await startTracing({ service: "test", otlpEndpoint: `http://127.0.0.1:${port}` });
    tracer().startActiveSpan("unit of work", (span) => span.end());
    metrics.getMeter("test").createCounter("things_done").add(1);
    await telemetry.shutdown(); // flushes both exporters
    expect(received).toContain("/v1/traces");
    expect(received).toContain("/v1/metrics");
  });
});

describe("startTracing without an exporter", () => {
  it("loads the OpenTelemetry SDK and the OTLP exporters only when spans are exported (dynamic imports)", async () => {
    // Loaded at start-up they cost every service 8-15 MB of RSS and 0.2-0.4 s of CPU when nothing is exported.
    const result = await build({ entryPoints: [join(import.meta.dirname, "tracing.ts")], bundle: true, write: false, metafile: true, platform: "node", format: "esm", packages: "external", logLevel: "silent" });
    const imports = Object.values(result.metafile.inputs).flatMap((input) => input.imports);
    const onDemand = ["@opentelemetry/sdk-node", "@opentelemetry/exporter-trace-otlp-http", "@opentelemetry/exporter-metrics-otlp-http", "@opentelemetry/sdk-metrics", "@opentelemetry/resources"];
    for (const name of onDemand) {
      const kinds = imports.filter((entry) => entry.path === name).map((entry) => entry.kind);
      expect(kinds, name).toEqual(["dynamic-import"]);
    }
  });
});
