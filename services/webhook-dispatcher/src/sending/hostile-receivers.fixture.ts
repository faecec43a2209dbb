import { createServer, type Server, type Socket } from "node:net";

/**
 * Receivers that misbehave at the socket level, for tests of the sender. Each answers every connection the same way:
 * - `reset`: reads the request, then resets the connection (TCP RST) without a byte of answer.
 * - `never-read`: accepts the connection and never reads the request nor answers.
 * - `garbage`: answers bytes that are not HTTP, then closes.
 * - `huge-body`: answers 200 with a 1 GB body, streamed as fast as the client takes it.
 * - `huge-body-then-reset`: answers 500 with a 1 GB body and resets the connection after 200 ms of it.
 * - `body-then-fin`: answers 200 with a 64 KB body and closes at once (the undici#5360 trigger).
 * - `silent`: reads the request and never answers.
 * - `huge-headers`: answers a status line and 1 MB of headers.
 * - `trickle`: answers one byte of its head every 100 ms, forever (a header that never ends).
 * - `slow-body`: answers a complete 200 head at once, then one byte of its body every 100 ms, forever.
 * - `nul-body`: answers 200 with the body `ok\0` (a NUL byte, as in any binary body) and closes: one connection per
 *   request, so `connections` counts the requests that reached it.
 */
export type HostileBehaviour =
  | "reset"
  | "never-read"
  | "garbage"
  | "huge-body"
  | "huge-body-then-reset"
  | "body-then-fin"
  | "silent"
  | "huge-headers"
  | "trickle"
  | "slow-body"
  | "nul-body";

export const ONE_GIGABYTE = 1024 * 1024 * 1024;

export interface HostileReceiver {
  url: string;
  /** Connections accepted so far. */
  readonly connections: number;
  /** Body bytes the receiver managed to hand to the kernel, across connections. */
  readonly bytesWritten: number;
  stop(): Promise<void>;
}

/** Starts a receiver on 127.0.0.1 that behaves as `behaviour` says on every connection. */
export async function startHostileReceiver(behaviour: HostileBehaviour): Promise<HostileReceiver> {
  const sockets = new Set<Socket>();
  const timers = new Set<NodeJS.Timeout>();
  let connections = 0;
  let bytesWritten = 0;

  const streamBody = (socket: Socket, head: string, total: number, resetAfterMs?: number) => {
    const chunk = Buffer.alloc(64 * 1024, 0x61);
    let sent = 0;
    socket.write(head);
    const pump = () => {
      while (!socket.destroyed && sent < total) {
        sent += chunk.length;
        bytesWritten += chunk.length;
        if (!socket.write(chunk)) return void socket.once("drain", pump);
      }
      if (!socket.destroyed) socket.end();
    };
    pump();
    if (resetAfterMs !== undefined) {
      const timer = setTimeout(() => socket.resetAndDestroy(), resetAfterMs);
      timers.add(timer);
    }
  };

  const server: Server = createServer((socket) => {
    connections += 1;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    // The client going away mid-answer (EPIPE, ECONNRESET) is expected; it must not crash the test process.
    socket.on("error", () => undefined);
    if (behaviour === "never-read") {
      socket.pause();
      return;
    }
    socket.once("data", () => {
      switch (behaviour) {
        case "reset":
          socket.resetAndDestroy();
          return;
        case "garbage":
          socket.end(Buffer.concat([Buffer.from("SSH-2.0-OpenSSH_9.6\r\n"), Buffer.from([0, 0xff, 0xfe, 0x13, 0x37]), Buffer.from("\r\n\r\n")]));
          return;
        case "huge-body":
          streamBody(socket, `HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: ${ONE_GIGABYTE}\r\n\r\n`, ONE_GIGABYTE);
          return;
        case "huge-body-then-reset":
          streamBody(socket, `HTTP/1.1 500 Internal Server Error\r\ncontent-length: ${ONE_GIGABYTE}\r\n\r\n`, ONE_GIGABYTE, 200);
          return;
        case "body-then-fin": {
          const body = Buffer.alloc(64 * 1024, 0x62);
          socket.write(`HTTP/1.1 200 OK\r\ncontent-length: ${body.length}\r\nconnection: close\r\n\r\n`);
          socket.write(body);
          socket.end();
          return;
        }
        case "silent":
          return;
        case "huge-headers": {
          const line = `x-filler: ${"h".repeat(1000)}\r\n`;
          socket.write("HTTP/1.1 200 OK\r\n");
          for (let i = 0; i < 1024 && !socket.destroyed; i += 1) socket.write(line);
          socket.end("content-length: 0\r\n\r\n");
          return;
        }
        case "trickle": {
          // A valid start, then a header value that never ends: the head is never complete.
          const answer = "HTTP/1.1 200 OK\r\nx-slow: ";
          let index = 0;
          const timer = setInterval(() => {
            if (socket.destroyed) return clearInterval(timer);
            socket.write(index < answer.length ? answer[index]! : "a");
            index += 1;
          }, 100);
          timers.add(timer);
          return;
        }
        case "nul-body":
          socket.end(Buffer.concat([Buffer.from("HTTP/1.1 200 OK\r\ncontent-type: application/octet-stream\r\ncontent-length: 3\r\nconnection: close\r\n\r\n"), Buffer.from([0x6f, 0x6b, 0x00])]));
          return;
        case "slow-body": {
          socket.write(`HTTP/1.1 200 OK\r\ncontent-type: text/plain\r\ncontent-length: ${ONE_GIGABYTE}\r\n\r\n`);
          const timer = setInterval(() => {
            if (socket.destroyed) return clearInterval(timer);
            socket.write("s");
          }, 100);
          timers.add(timer);
          return;
        }
      }
    });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  if (!address || typeof address === "string") throw new Error("no address");
  return {
    url: `http://127.0.0.1:${address.port}/hooks/${behaviour}`,
    get connections() {
      return connections;
    },
    get bytesWritten() {
      return bytesWritten;
    },
    async stop() {
      for (const timer of timers) clearTimeout(timer);
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}
