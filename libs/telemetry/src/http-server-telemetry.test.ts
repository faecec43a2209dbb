import Fastify from "fastify";
import { trace } from "@opentelemetry/api";
import { InMemorySpanExporter, type ReadableSpan } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Registry } from "prom-client";
import { instrumentHttpServer } from "./http-server-telemetry.js";
import { currentTraceHeaders, startTracing, type Tracing } from "./tracing.js";

describe("instrumentHttpServer", () => {
  // Kept here as well: the in-memory exporter forgets its spans when the SDK shuts it down.
  const finished: ReadableSpan[] = [];
  const exporter = new InMemorySpanExporter();
  const exportSpans = exporter.export.bind(exporter);
  exporter.export = (spans, done) => {
    finished.push(...spans);
    exportSpans(spans, done);
  };
  let tracing: Tracing;
  beforeAll(async () => {
    tracing = await startTracing({ service: "http-test", exporter });
  });
  afterAll(() => tracing.shutdown().catch(() => undefined));

  it("continues the caller's trace in a server span that is active in the handler, after body parsing", async () => {
    const registry = new Registry();
    const app = Fastify();
    let seenInHandler: Record<string, string> = {};
    app.post("/jobs/:jobId", async () => {
      // What gRPC calls and stored events pick up.
      seenInHandler = currentTraceHeaders();
      return { data: trace.getActiveSpan() ? "traced" : "untraced" };
    });
    instrumentHttpServer(app, registry);
    // Hooks run in order: this one runs once the span has ended.
    const responded = new Promise<void>((resolve) => app.addHook("onResponse", async () => resolve()));
    const traceId = "4bf92f3577b34da6a3ce929d0e0e4736";
    const response = await app.inject({
      method: "POST",
      url: "/jobs/job_1",
      headers: { traceparent: `00-${traceId}-00f067aa0ba902b7-01`, "content-type": "application/json" },
      payload: JSON.stringify({ big: "x".repeat(100_000) }),
    });
    expect(response.json()).toEqual({ data: "traced" });
    expect(seenInHandler.traceparent).toContain(traceId);
    await responded;
    await tracing.shutdown(); // flushes the batch processor
    const span = finished.find((candidate) => candidate.name === "POST /jobs/:jobId");
    expect(span?.spanContext().traceId).toBe(traceId);
    expect(span?.attributes["http.response.status_code"]).toBe(200);
    await app.close();
  });

  it("counts requests and observes latency by route pattern, not by raw path", async () => {
    const registry = new Registry();
    const app = Fastify();
    app.get("/jobs/:jobId", async () => ({ data: 1 }));
    instrumentHttpServer(app, registry);
    await app.inject({ url: "/jobs/job_1" });
    await app.inject({ url: "/jobs/job_2" });
    await app.inject({ url: "/nowhere" });
    const text = await registry.metrics();
    expect(text).toContain('http_requests_total{method="GET",route="/jobs/:jobId",status="200"} 2');
    expect(text).toContain('http_requests_total{method="GET",route="unmatched",status="404"} 1');
    expect(text).toMatch(/http_request_duration_seconds_count\{method="GET",route="\/jobs\/:jobId"\} 2/);
    await app.close();
  });
});
