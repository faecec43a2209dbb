import { pino, type Logger, type DestinationStream } from "pino";
import { isSpanContextValid, trace } from "@opentelemetry/api";
import { redactSecrets } from "./secret-redaction.js";

export type { Logger } from "pino";


export interface LoggerOptions {
  service: string;
  level?: string;
  /** Where lines go; stdout by default. Tests pass a stream to assert on captured lines. */
  destination?: DestinationStream;
}

/** A structured JSON logger with the service name, the active trace id on each line, and secret redaction. */
export function createLogger({ service, level = "info", destination }: LoggerOptions): Logger {
  const logger = pino(
    {
      level,
      base: { service },
      // Secrets are replaced in each line's fields and in every logger's bindings (see redactSecrets).
      formatters: { log: (fields) => redactSecrets(fields), bindings: (bindings) => redactSecrets(bindings) },
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
  // A child's bindings are written once, when it is made, and pino runs no formatter over them: they are redacted
  // here. Children are made from their parent's prototype chain, so every descendant goes through this one.
  const makeChild = logger.child;
  logger.child = function (this: Logger, bindings, options) {
    return makeChild.call(this, redactSecrets(bindings), options);
  } as Logger["child"];
  return logger;
}
