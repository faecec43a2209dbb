import { Writable } from "node:stream";
import { describe, expect, it } from "vitest";
import { createLogger } from "@renderbus/telemetry";
import { betterAuthLog } from "./better-auth-log.js";

function capturedLogger() {
  const lines: Array<Record<string, unknown>> = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split("\n").filter(Boolean)) lines.push(JSON.parse(line) as Record<string, unknown>);
      done();
    },
  });
  return { logger: createLogger({ service: "auth", level: "debug", destination }), lines };
}

describe("Better Auth's log lines", () => {
  it("are written as structured lines of the auth service", async () => {
    const { logger, lines } = capturedLogger();
    betterAuthLog(logger)("warn", "Rate limit storage unavailable", { attempt: 2 });
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines).toEqual([expect.objectContaining({ level: 40, msg: "Rate limit storage unavailable", component: "better-auth", details: { attempt: 2 } })]);
  });

  it("keep an error's message and stack, and redact secrets in the objects it passes", async () => {
    const { logger, lines } = capturedLogger();
    betterAuthLog(logger)("error", "Failed to create verification", new Error("duplicate key"), { token: "tok_secret", cookie: "rb_session=abc" });
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines[0]).toMatchObject({ err: { message: "duplicate key", stack: expect.stringContaining("Error: duplicate key") }, details: { token: "[redacted]", cookie: "[redacted]" } });
    expect(JSON.stringify(lines)).not.toMatch(/tok_secret|rb_session=abc/);
  });

  it("drop only its false schema warning about the bigint columns it creates itself", async () => {
    const { logger, lines } = capturedLogger();
    const log = betterAuthLog(logger);
    log("warn", "Field lastRequest in table rateLimit has a different type in the database. Expected number but got int8.");
    log("warn", "Field lastRequest in table rateLimit has a different type in the database. Expected number but got text.");
    await new Promise((resolve) => setImmediate(resolve));
    expect(lines.map((line) => line.msg)).toEqual(["Field lastRequest in table rateLimit has a different type in the database. Expected number but got text."]);
  });
});
