import { PassThrough } from "node:stream";
import Fastify from "fastify";
import { afterEach, describe, expect, it, vi } from "vitest";
import { createLogger } from "@renderbus/telemetry";
import { registerBodyDeadlines } from "./body-deadlines.js";

/**
 * The deadline of a request answered before its body was read fires later, when the test (or the client) has moved
 * on. Under `inject()` the request's socket is light-my-request's, which has no `destroy`: the deadline must end the
 * request without it, or the timer throws an uncaught exception in whatever runs next (seen in CI: a shared test
 * worker's later file failed the run 60 s after a gateway test). The real-socket behaviour is in
 * body-deadlines.int.test.ts.
 */

afterEach(() => vi.useRealTimers());

async function appAnsweringBeforeTheBody(seen: (request: { destroyed: boolean }) => void) {
  const app = Fastify();
  registerBodyDeadlines(app, { bodyMs: 1_000, uploadMs: 1_000 }, createLogger({ service: "gateway-test", level: "silent" }));
  // What authentication does: the answer goes out before the body is read.
  app.addHook("onRequest", async (_request, reply) => reply.code(401).send({ error: { code: "UNAUTHENTICATED" } }));
  app.addHook("onResponse", (request, _reply, done) => {
    seen(request.raw);
    done();
  });
  app.post("/jobs", async () => ({ never: "reached" }));
  await app.ready();
  return app;
}

describe("a request answered before its body arrived", () => {
  it("is ended at its deadline without throwing, also when it was injected", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    let request: { destroyed: boolean } | undefined;
    const app = await appAnsweringBeforeTheBody((raw) => (request = raw));
    // A body that never ends: its first bytes, then nothing.
    const body = new PassThrough();
    body.write('{"a":');
    const response = await app.inject({ method: "POST", url: "/jobs", headers: { "content-type": "application/json", "content-length": "7" }, payload: body });
    expect(response.statusCode).toBe(401);
    expect(request?.destroyed).toBe(false);

    expect(() => vi.advanceTimersByTime(1_000)).not.toThrow();
    expect(request?.destroyed).toBe(true);
    await app.close();
  });

  it("leaves no deadline armed once the rest of its body has been read and dropped", async () => {
    vi.useFakeTimers({ toFake: ["setTimeout", "clearTimeout"] });
    let request: { destroyed: boolean; readableEnded: boolean } | undefined;
    const app = await appAnsweringBeforeTheBody((raw) => (request = raw as typeof request));
    const response = await app.inject({ method: "POST", url: "/jobs", headers: { "content-type": "application/json" }, payload: '{"a":1}' });
    expect(response.statusCode).toBe(401);
    await vi.waitFor(() => expect(request?.readableEnded).toBe(true));
    expect(vi.getTimerCount()).toBe(0);
    await app.close();
  });
});
