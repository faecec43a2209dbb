import { trace, context, metrics, propagation, isSpanContextValid, ROOT_CONTEXT, type Tracer, type Context, type Link } from "@opentelemetry/api";
import type { SpanExporter } from "@opentelemetry/sdk-trace-base";
import { W3CTraceContextPropagator } from "@opentelemetry/core";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";

export interface TracingOptions {
  service: string;
  /** OTLP/HTTP endpoint (e.g. http://localhost:4318). Without it and without `exporter`, no spans leave the process. */
  otlpEndpoint?: string | undefined;
  /** An exporter to use instead of OTLP (tests pass an in-memory one). */
  exporter?: SpanExporter;
}

export interface Tracing {
  /** Flushes what is exported and gives the OpenTelemetry globals back: a later startTracing in the same process registers its own. */
  shutdown(): Promise<void>;
}

/**
 * Unregisters the global tracer and meter providers, context manager and propagator. The OpenTelemetry API refuses a second
 * registration while one is in place (it keeps the first, now shut down, and says so only through its diagnostic
 * logger): without this, tracing started again in one process (test files sharing a worker) exported nothing.
 */
function releaseGlobals(): void {
  trace.disable();
  metrics.disable();
  context.disable();
  propagation.disable();
}

/**
 * Starts the OpenTelemetry SDK for a service: traces (and metrics) exported over OTLP/HTTP when an endpoint is set. Propagation (W3C traceparent) is always on so that trace context
 * flows through gRPC metadata, NATS headers and stored events even when nothing is exported.
 */
export async function startTracing({ service, otlpEndpoint, exporter }: TracingOptions): Promise<Tracing> {
  if (!exporter && !otlpEndpoint) {
    // Nothing is exported, but incoming trace context must still flow to outgoing calls and stored events.
    context.setGlobalContextManager(new AsyncLocalStorageContextManager().enable());
    propagation.setGlobalPropagator(new W3CTraceContextPropagator());
    return { shutdown: async () => releaseGlobals() };
  }
  // Loaded only when spans leave the process: the SDK and the OTLP exporters cost every service that exports nothing
  // start-up time and memory (see docs/operations.md, Observability).
  const [{ NodeSDK }, { OTLPTraceExporter }, { OTLPMetricExporter }, { PeriodicExportingMetricReader }, { resourceFromAttributes }] = await Promise.all([
    import("@opentelemetry/sdk-node"),
    import("@opentelemetry/exporter-trace-otlp-http"),
    import("@opentelemetry/exporter-metrics-otlp-http"),
    import("@opentelemetry/sdk-metrics"),
    import("@opentelemetry/resources"),
  ]);
  const endpoint = otlpEndpoint?.replace(/\/$/, "");
  const spanExporter = exporter ?? new OTLPTraceExporter({ url: `${endpoint}/v1/traces` });
  const sdk = new NodeSDK({
    resource: resourceFromAttributes({ "service.name": service }),
    traceExporter: spanExporter,
    // Metrics go over OTLP beside traces when an endpoint is configured; /metrics (Prometheus) works either way.
    ...(endpoint
      ? {
          metricReader: new PeriodicExportingMetricReader({
            exporter: new OTLPMetricExporter({ url: `${endpoint}/v1/metrics` }),
            exportIntervalMillis: 15_000,
          }),
        }
      : {}),
    instrumentations: [],
  });
  sdk.start();
  return { shutdown: () => sdk.shutdown().finally(releaseGlobals) };
}

export function tracer(name = "renderbus"): Tracer {
  return trace.getTracer(name);
}

/** The W3C trace-context headers of the active context (empty when there is no active span). */
export function currentTraceHeaders(ctx: Context = context.active()): Record<string, string> {
  const carrier: Record<string, string> = {};
  propagation.inject(ctx, carrier);
  return carrier;
}

/** A context continuing the trace described by stored or received headers. */
export function contextFromTraceHeaders(headers: Record<string, string | undefined>): Context {
  return propagation.extract(context.active(), headers);
}

export { SpanKind, SpanStatusCode } from "@opentelemetry/api";

/**
 * Links the active span to the traces described by stored headers (duplicates once): work done once for items of
 * many traces (one message carrying a batch of them) belongs to none of them, so it is not their child, but each of
 * those traces can be followed to it. Missing headers, or headers without a valid trace context, add nothing.
 */
export function linkActiveSpanTo(traces: Array<Record<string, string | undefined> | undefined>): void {
  const span = trace.getActiveSpan();
  // Nothing records the span (tracing off): parsing every update's context would cost a decode each for nothing.
  if (!span?.isRecording()) return;
  const links = new Map<string, Link>();
  for (const headers of traces) {
    if (!headers) continue;
    const linked = trace.getSpanContext(propagation.extract(ROOT_CONTEXT, headers));
    if (linked && isSpanContextValid(linked)) links.set(`${linked.traceId}-${linked.spanId}`, { context: linked });
  }
  if (links.size > 0) span.addLinks([...links.values()]);
}

/** Runs `work` in the trace described by stored headers (work done later on behalf of an earlier request). */
export function withTraceHeaders<T>(headers: Record<string, string | undefined>, work: () => T): T {
  return context.with(contextFromTraceHeaders(headers), work);
}
