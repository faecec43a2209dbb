import { Writable } from "node:stream";
import { context, INVALID_SPAN_CONTEXT, trace, TraceFlags } from "@opentelemetry/api";
import { AsyncLocalStorageContextManager } from "@opentelemetry/context-async-hooks";
import { describe, expect, it } from "vitest";
import { createLogger } from "./logger.js";

/** A logger whose lines are captured as parsed JSON objects. */
function capturingLogger(level = "info") {
  const lines: Record<string, unknown>[] = [];
  const raw: string[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, callback) {
      for (const line of chunk.toString().split("\n").filter(Boolean)) {
        raw.push(line);
        lines.push(JSON.parse(line) as Record<string, unknown>);
      }
      callback();
    },
  });
  return { logger: createLogger({ service: "test-svc", level, destination }), lines, raw };
}

describe("createLogger", () => {
  it("writes structured JSON lines with the service name", () => {
    const { logger, lines } = capturingLogger();
    logger.info({ jobId: "job_1" }, "job queued");
    expect(lines[0]).toMatchObject({ service: "test-svc", jobId: "job_1", msg: "job queued", level: 30 });
  });

  it("redacts webhookSecret, authorization and password wherever they appear", () => {
    const { logger, lines, raw } = capturingLogger();
    logger.info(
      {
        webhookSecret: "whsec_top",
        password: "hunter2",
        authorization: "Bearer rb_live_key",
        org: { webhookSecret: "whsec_nested", password: "nested-pass" },
        req: { headers: { authorization: "Bearer rb_req_key", cookie: "rb_session=abc" } },
        target: { org: { webhookSecret: "whsec_deep" } },
        apiKey: "rb_full_key",
        secret: "s",
        token: "t",
      },
      "configured",
    );
    const line = lines[0]!;
    expect(line.webhookSecret).toBe("[redacted]");
    expect(line.password).toBe("[redacted]");
    expect(line.authorization).toBe("[redacted]");
    expect(line.org).toEqual({ webhookSecret: "[redacted]", password: "[redacted]" });
    expect(line.req).toEqual({ headers: { authorization: "[redacted]", cookie: "[redacted]" } });
    expect(line.target).toEqual({ org: { webhookSecret: "[redacted]" } });
    expect(line.apiKey).toBe("[redacted]");
    for (const secret of ["whsec_", "hunter2", "rb_live_key", "rb_req_key", "nested-pass", "rb_session=abc", "rb_full_key"]) {
      expect(raw[0]).not.toContain(secret);
    }
  });

  it("redacts URLs, signatures, tokens, secrets, authorization and cookies, top level and nested (SECURITY-AUDIT finding 23)", () => {
    const { logger, lines, raw } = capturingLogger();
    const signed = "https://renderbus.example/outputs/org_1/job_1/out.mp4?expires=1&signature=" + "ab".repeat(32);
    const presigned = "https://bucket.s3.amazonaws.com/in.mp4?X-Amz-Signature=presigned-credential";
    logger.error(
      {
        url: signed,
        signature: "cd".repeat(32),
        token: "top-token",
        secret: "top-secret",
        authorization: "Bearer rb_top",
        cookie: "rb_session=top",
        result: { url: signed },
        input: { url: presigned, signature: "nested-signature", token: "nested-token", secret: "nested-secret", authorization: "Bearer rb_nested", cookie: "rb_session=nested" },
        route: "/outputs/*",
        path: "/outputs/org_1/job_1/out.mp4",
      },
      "request failed",
    );
    const line = lines[0]!;
    for (const key of ["url", "signature", "token", "secret", "authorization", "cookie"]) {
      expect(line[key], key).toBe("[redacted]");
      expect((line.input as Record<string, unknown>)[key], `input.${key}`).toBe("[redacted]");
    }
    expect(line.result).toEqual({ url: "[redacted]" });
    // A route pattern and a path without its query stay readable.
    expect(line).toMatchObject({ route: "/outputs/*", path: "/outputs/org_1/job_1/out.mp4" });
    for (const secret of ["abab", "cdcd", "presigned-credential", "nested-signature", "top-token", "nested-token", "top-secret", "nested-secret", "rb_top", "rb_nested", "rb_session"]) {
      expect(raw[0]).not.toContain(secret);
    }
  });

  it("redacts inside arrays, errors and a child logger's bindings, and leaves the logged objects as they were", () => {
    const { logger, lines, raw } = capturingLogger();
    const error = Object.assign(new Error("upstream refused"), { url: "https://bucket/in.mp4?X-Amz-Signature=in-error" });
    const inputs = [{ url: "https://bucket/a.mp4?X-Amz-Signature=in-array" }];
    logger.child({ endpoint: { url: "https://hooks.example/?token=in-binding" } }).child({ token: "grandchild-token" }).error({ err: error, inputs }, "download failed");
    const line = lines[0]!;
    expect(line.endpoint).toEqual({ url: "[redacted]" });
    expect(line.token).toBe("[redacted]");
    expect(line.inputs).toEqual([{ url: "[redacted]" }]);
    expect(line.err).toMatchObject({ type: "Error", message: "upstream refused", url: "[redacted]" });
    expect((line.err as { stack: string }).stack).toContain("upstream refused");
    for (const secret of ["in-error", "in-array", "in-binding", "grandchild-token"]) expect(raw[0]).not.toContain(secret);
    expect(error.url).toContain("in-error");
    expect(inputs[0]!.url).toContain("in-array");
  });

  it("carries the active span's trace and span ids, and none inside a span of tracing turned off", () => {
    const manager = new AsyncLocalStorageContextManager().enable();
    context.setGlobalContextManager(manager);
    try {
      const { logger, lines } = capturingLogger();
      const valid = { traceId: "a".repeat(32), spanId: "b".repeat(16), traceFlags: TraceFlags.SAMPLED };
      context.with(trace.setSpan(context.active(), trace.wrapSpanContext(valid)), () => logger.info("traced"));
      context.with(trace.setSpan(context.active(), trace.wrapSpanContext(INVALID_SPAN_CONTEXT)), () => logger.info("tracing off"));
      logger.info("no span");
      expect(lines[0]).toMatchObject({ msg: "traced", traceId: valid.traceId, spanId: valid.spanId });
      for (const line of lines.slice(1)) {
        expect(line).not.toHaveProperty("traceId");
        expect(line).not.toHaveProperty("spanId");
      }
    } finally {
      context.disable();
      manager.disable();
    }
  });

  it("honours the level", () => {
    const { logger, lines } = capturingLogger("warn");
    logger.info("hidden");
    logger.warn("shown");
    expect(lines.map((line) => line.msg)).toEqual(["shown"]);
  });
});
