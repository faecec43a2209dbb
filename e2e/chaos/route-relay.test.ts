import { createServer, connect, type Server } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { startRouteRelay, type RouteRelay } from "./route-relay.js";

/** An echo server on a free loopback port. */
async function echoServer(): Promise<{ server: Server; port: number }> {
  const server = createServer((socket) => {
    socket.on("error", () => undefined);
    socket.pipe(socket);
  });
  await new Promise<void>((listening) => server.listen(0, "127.0.0.1", () => listening()));
  return { server, port: (server.address() as { port: number }).port };
}

/** Sends a line through `port` and resolves what came back, or "closed" if the link was cut. */
function roundTrip(port: number, text: string): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    socket.on("error", () => resolve("closed"));
    socket.on("close", () => resolve("closed"));
    socket.once("data", (data) => {
      resolve(data.toString());
      socket.destroy();
    });
    socket.write(text);
  });
}

describe("route relay", () => {
  const cleanups: (() => Promise<void> | void)[] = [];
  afterEach(async () => {
    for (const cleanup of cleanups.splice(0)) await cleanup();
  });

  it("forwards bytes both ways, cuts open links and refuses new ones while blocked, and forwards again after", async () => {
    const echo = await echoServer();
    cleanups.push(() => new Promise((done) => echo.server.close(() => done())));
    const relay: RouteRelay = await startRouteRelay(() => echo.port);
    cleanups.push(() => relay.close());

    expect(await roundTrip(relay.port, "hello")).toBe("hello");

    const held = connect(relay.port, "127.0.0.1");
    const cut = new Promise((closed) => held.on("close", closed));
    held.on("error", () => undefined);
    await new Promise((connected) => held.once("connect", connected));
    await new Promise((settled) => setTimeout(settled, 50));
    relay.block();
    await cut;
    expect(await roundTrip(relay.port, "during")).toBe("closed");

    relay.unblock();
    expect(await roundTrip(relay.port, "after")).toBe("after");
  });

  it("follows a target that moved", async () => {
    const first = await echoServer();
    const second = await echoServer();
    cleanups.push(() => new Promise((done) => first.server.close(() => done())), () => new Promise((done) => second.server.close(() => done())));
    let target = first.port;
    const relay = await startRouteRelay(() => target);
    cleanups.push(() => relay.close());
    expect(await roundTrip(relay.port, "one")).toBe("one");
    target = second.port;
    await new Promise<void>((closed) => first.server.close(() => closed()));
    expect(await roundTrip(relay.port, "two")).toBe("two");
  });
});
