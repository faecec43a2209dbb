import { context, propagation, SpanKind, SpanStatusCode, trace, type Span } from "@opentelemetry/api";
import { Counter, Histogram, type Registry } from "prom-client";
import { tracer } from "./tracing.js";

/** The parts of a Fastify request these hooks read (typed structurally: this library does not depend on Fastify). */
interface HookRequest {
  method: string;
  url: string;
  headers: Record<string, string | string[] | undefined>;
  routeOptions: { url?: string | undefined };
}
interface HookReply {
  statusCode: number;
  elapsedTime: number;
}
type Done = (error?: Error) => void;

/** The hook registration of a Fastify instance. */
export interface HookableServer {
  addHook(name: "onRequest" | "preHandler", hook: (request: never, reply: never, done: Done) => void): unknown;
  addHook(name: "onResponse", hook: (request: never, reply: never, done: Done) => void): unknown;
}

const spans = new WeakMap<object, Span>();

/** `route` is the route pattern (`/jobs/:jobId`), never the raw path, so label cardinality stays bounded. */
const routeOf = (request: HookRequest) => request.routeOptions.url ?? "unmatched";

/**
 * Request telemetry for a Fastify server: a SERVER span per request (continuing a caller's `traceparent`), active
 * while the handler runs so gRPC calls and stored events join the trace; and the Prometheus request rate and latency
 * by method, route and status (`http_requests_total`, `http_request_duration_seconds`).
 *
 * The span is made active in a callback-style `preHandler` hook: Fastify calls the handler synchronously from the
 * last hook's `done`, so the handler and everything it awaits run inside the span's context. (Making it active in
 * `onRequest` would be lost across body parsing, which continues in the socket's async context.)
 */
export function instrumentHttpServer(app: HookableServer, registry: Registry): void {
  const requests = new Counter({
    name: "http_requests_total",
    help: "HTTP requests answered, by method, route pattern and status",
    labelNames: ["method", "route", "status"],
    registers: [registry],
  });
  const duration = new Histogram({
    name: "http_request_duration_seconds",
    help: "HTTP request latency, by method and route pattern",
    labelNames: ["method", "route"],
    buckets: [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });

  app.addHook("onRequest", ((request: HookRequest, _reply: HookReply, done: Done) => {
    const carrier: Record<string, string> = {};
    for (const name of ["traceparent", "tracestate"]) {
      const value = request.headers[name];
      if (typeof value === "string") carrier[name] = value;
    }
    const parent = propagation.extract(context.active(), carrier);
    const route = routeOf(request);
    const span = tracer().startSpan(
      `${request.method} ${route}`,
      { kind: SpanKind.SERVER, attributes: { "http.request.method": request.method, "http.route": route, "url.path": request.url.split("?")[0] } },
      parent,
    );
    spans.set(request, span);
    done();
  }) as never);

  app.addHook("preHandler", ((request: HookRequest, _reply: HookReply, done: Done) => {
    const span = spans.get(request);
    if (!span) return done();
    context.with(trace.setSpan(context.active(), span), () => done());
  }) as never);

  app.addHook("onResponse", ((request: HookRequest, reply: HookReply, done: Done) => {
    const route = routeOf(request);
    requests.inc({ method: request.method, route, status: String(reply.statusCode) });
    duration.observe({ method: request.method, route }, reply.elapsedTime / 1000);
    const span = spans.get(request);
    if (span) {
      span.setAttribute("http.response.status_code", reply.statusCode);
      if (reply.statusCode >= 500) span.setStatus({ code: SpanStatusCode.ERROR });
      span.end();
      spans.delete(request);
    }
    done();
  }) as never);
}
