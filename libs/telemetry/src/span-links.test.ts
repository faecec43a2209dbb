import type { ReadableSpan, SpanExporter } from "@opentelemetry/sdk-trace-base";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { linkActiveSpanTo, startTracing, tracer, type Tracing } from "./tracing.js";

describe("linkActiveSpanTo", () => {
  // Keeps what was exported past shutdown (which flushes the SDK's batch), unlike InMemorySpanExporter.
  const exported: ReadableSpan[] = [];
  const exporter: SpanExporter = {
    export: (spans, done) => {
      exported.push(...spans);
      done({ code: 0 });
    },
    shutdown: async () => {},
  };
  let tracing: Tracing;
  beforeAll(async () => {
    tracing = await startTracing({ service: "links-test", exporter });
  });
  afterAll(() => tracing.shutdown());

  it("links the active span to each valid trace context once, and ignores headers without one", async () => {
    const [a, b] = ["a", "b"].map((digit) => ({ traceId: digit.repeat(32), spanId: digit.repeat(16) }));
    const headers = ({ traceId, spanId }: { traceId: string; spanId: string }) => ({ traceparent: `00-${traceId}-${spanId}-01` });
    tracer().startActiveSpan("project a batch", (span) => {
      linkActiveSpanTo([headers(a!), {}, undefined, headers(b!), headers(a!), { traceparent: "garbage" }]);
      span.end();
    });
    await tracing.shutdown();
    const [span] = exported;
    expect(span?.links.map((link) => ({ traceId: link.context.traceId, spanId: link.context.spanId }))).toEqual([a, b]);
  });
});
