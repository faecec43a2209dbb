import { pino, type Logger, type DestinationStream } from "pino";
import { isSpanContextValid, trace } from "@opentelemetry/api";

export type { Logger } from "pino";

/**
 * Paths pino replaces with "[redacted]" wherever they appear in a log line (top level, or one level down: `*.x`).
 * Secrets must never reach a log: this is the safety net, not the plan (code should not log these objects at all).
 * `url` is here because URLs carry credentials in their query (signed `/outputs` links, presigned input URLs) and
 * `signature` because it is one; a line that means a route pattern calls it `route`, a path without query `path`.
 */
export const REDACTED_PATHS = [
  "key",
  "*.key",
  "apiKey",
  "*.apiKey",
  "secret",
  "*.secret",
  "webhookSecret",
  "*.webhookSecret",
  "*.*.webhookSecret",
  "password",
  "*.password",
  "token",
  "*.token",
  "authorization",
  "*.authorization",
  "headers.authorization",
  "req.headers.authorization",
  "req.headers.cookie",
  "res.headers[\"set-cookie\"]",
  "cookie",
  "*.cookie",
  "url",
  "*.url",
  "signature",
  "*.signature",
];

export interface LoggerOptions {
  service: string;
  level?: string;
  /** Where lines go; stdout by default. Tests pass a stream to assert on captured lines. */
  destination?: DestinationStream;
}

/** A structured JSON logger with the service name, the active trace id on each line, and secret redaction. */
export function createLogger({ service, level = "info", destination }: LoggerOptions): Logger {
  return pino(
    {
      level,
      base: { service },
      redact: { paths: REDACTED_PATHS, censor: "[redacted]" },
      mixin() {
        const spanContext = trace.getActiveSpan()?.spanContext();
        // With tracing off, instrumented code still runs inside spans, with the all-zero ids of an invalid context:
        // ~90 bytes of every line that correlate nothing.
        if (!spanContext || !isSpanContextValid(spanContext)) return {};
        return { traceId: spanContext.traceId, spanId: spanContext.spanId };
      },
    },
    // Asynchronous, buffered writes: synchronous stdout writes were ~30% of the dispatcher's CPU under load
    // (docs/BENCHMARKS.md). `runService` flushes the buffer on shutdown.
    destination ?? pino.destination({ dest: 1, sync: false, minLength: 4096 }),
  );
}
