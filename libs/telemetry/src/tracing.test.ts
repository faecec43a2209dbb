import { createServer } from "node:http";
import { join } from "node:path";
import { metrics } from "@opentelemetry/api";
import { build } from "esbuild";
import { afterAll, describe, expect, it } from "vitest";
import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base";
import { startTracing, tracer } from "./tracing.js";

/** An exporter that keeps what it is given past shutdown. */
function keepingExporter(): SpanExporter & { spans: ReadableSpan[] } {
  const spans: ReadableSpan[] = [];
  return {
    spans,
    export: (batch, done) => {
      spans.push(...batch);
      done({ code: 0 });
    },
    shutdown: async () => {},
  };
}

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

describe("tracing started again in the same process", () => {
  it("exports to the new exporter once the first tracing has shut down", async () => {
    const first = keepingExporter();
    const second = keepingExporter();
    const before = await startTracing({ service: "first", exporter: first });
    tracer().startActiveSpan("first work", (span) => span.end());
    await before.shutdown();
    const after = await startTracing({ service: "second", exporter: second });
    tracer().startActiveSpan("second work", (span) => span.end());
    await after.shutdown();
    expect(first.spans.map((span) => span.name)).toEqual(["first work"]);
    expect(second.spans.map((span) => span.name)).toEqual(["second work"]);
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
