import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { connect, type AddressInfo, type Socket } from "node:net";
import { gatewayWithFakes, type GatewayWithFakes } from "./gateway-with-fakes.test-support.js";

/**
 * A body that does not arrive by REQUEST_BODY_TIMEOUT_MS is answered and its connection closed (SPEC section 10):
 * before, a client could send all but the last byte of a body, without a credential, and hold the buffered bytes
 * and the socket for ever. Over real sockets: `inject()` has no connection to hold.
 */

const DEADLINE_MS = 1_000;

let gateway: GatewayWithFakes;
let port: number;
beforeAll(async () => {
  gateway = await gatewayWithFakes({}, { IP_REQUESTS_PER_MINUTE: "100000", REQUEST_BODY_TIMEOUT_MS: String(DEADLINE_MS) });
  await gateway.app.listen({ host: "127.0.0.1", port: 0 });
  port = (gateway.app.server.address() as AddressInfo).port;
});
afterAll(() => gateway?.close());

interface Connection {
  socket: Socket;
  /** Everything received so far. */
  text(): string;
  /** Resolves once the gateway closed the connection, with how long after `since` it did. */
  closed: Promise<number>;
}

async function open(since = Date.now()): Promise<Connection> {
  const socket = connect(port, "127.0.0.1");
  const received: Buffer[] = [];
  socket.on("data", (chunk) => received.push(chunk));
  socket.on("error", () => undefined);
  const closed = new Promise<number>((resolve) => socket.once("close", () => resolve(Date.now() - since)));
  await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
  return { socket, text: () => Buffer.concat(received).toString("latin1"), closed };
}

const statusLines = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]));

describe("a request body that does not arrive in time", () => {
  it("is answered 400 naming the deadline and its connection closed, without a credential", async () => {
    const body = JSON.stringify({ type: "transcode", inputs: { source: "https://example.com/a.mp4" }, params: {}, pad: "x".repeat(100_000) });
    const started = Date.now();
    const connection = await open(started);
    // All but the last byte, then nothing: what holds a buffered body and a socket open.
    connection.socket.write(`POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body.slice(0, -1)}`);
    const closedAfter = await connection.closed;
    expect(closedAfter).toBeGreaterThanOrEqual(DEADLINE_MS - 50);
    expect(statusLines(connection.text())).toEqual([400]);
    expect(connection.text()).toContain(`{"error":{"code":"VALIDATION_ERROR","message":"body: not received in full within ${DEADLINE_MS / 1000} s"}}`);
  });

  it("of unknown length (chunked) is ended the same way", async () => {
    const connection = await open();
    connection.socket.write("POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n5\r\n{\"a\":\r\n");
    await connection.closed;
    expect(statusLines(connection.text())).toEqual([400]);
  });

  it("does not touch a body that arrived: the connection serves requests past the deadline", async () => {
    const connection = await open();
    const body = "{not json";
    connection.socket.write(`POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`);
    await new Promise((resolve) => setTimeout(resolve, DEADLINE_MS + 500));
    connection.socket.write("GET /no-such-route HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n");
    await connection.closed;
    expect(statusLines(connection.text())).toEqual([400, 404]);
    expect(connection.text()).not.toContain("not received in full");
  });
});
