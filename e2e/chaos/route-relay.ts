import { createServer, connect, type Server, type Socket } from "node:net";

/**
 * A TCP relay on a loopback port that forwards to another port, and can cut the link: `block()` resets every
 * connection through it and refuses new ones until `unblock()`. The 3-node NATS cluster routes every node-to-node
 * connection through one relay per direction, so a node can be partitioned (alive, its clients connected, its routes
 * gone) rather than only killed.
 */
export interface RouteRelay {
  /** The port the relay listens on. */
  readonly port: number;
  block(): void;
  unblock(): void;
  close(): Promise<void>;
}

/** `target` is read per connection, so the relay follows a node that came back on another port. */
export async function startRouteRelay(target: () => number | undefined): Promise<RouteRelay> {
  let blocked = false;
  const open = new Set<Socket>();
  const server: Server = createServer((incoming) => {
    const port = target();
    if (blocked || port === undefined) {
      incoming.resetAndDestroy();
      return;
    }
    const outgoing = connect(port, "127.0.0.1");
    for (const socket of [incoming, outgoing]) {
      open.add(socket);
      socket.on("error", () => undefined);
      socket.on("close", () => {
        open.delete(socket);
        incoming.destroy();
        outgoing.destroy();
      });
    }
    incoming.pipe(outgoing);
    outgoing.pipe(incoming);
  });
  await new Promise<void>((listening, failed) => {
    server.once("error", failed);
    server.listen(0, "127.0.0.1", () => listening());
  });
  const address = server.address();
  if (address === null || typeof address !== "object") throw new Error("route relay has no port");
  return {
    port: address.port,
    block() {
      blocked = true;
      for (const socket of open) socket.resetAndDestroy();
    },
    unblock() {
      blocked = false;
    },
    close: () =>
      new Promise((closed) => {
        for (const socket of open) socket.destroy();
        server.close(() => closed());
      }),
  };
}
