import { afterAll, beforeAll, describe, expect, it, vi } from "vitest";
import { connect } from "node:net";
import type { AddressInfo } from "node:net";
import { REFUSED_BODY_DRAIN_MAX_BYTES } from "./errors.js";
import { gatewayWithFakes, type GatewayWithFakes } from "./gateway-with-fakes.test-support.js";
import { INLINE_UPLOAD_BODY_LIMIT } from "../uploads/uploads.routes.js";

/**
 * A body over its route's limit is refused before it is read. The client is still sending it, so the refusal must
 * survive that: the gateway reads and discards a bounded rest and keeps the connection, so the client reads its 413
 * (a socket closed with unread bytes is reset, and the reset can destroy the answer before the client sees it).
 * Over a real socket: `inject()` has no connection to lose.
 */

// REQUEST_BODY_TIMEOUT_MS's default: how the body deadline of a request is told from other timers.
const BODY_DEADLINE_MS = 60_000;

let gateway: GatewayWithFakes;
let port: number;
beforeAll(async () => {
  gateway = await gatewayWithFakes({}, { IP_REQUESTS_PER_MINUTE: "100000" });
  await gateway.app.listen({ host: "127.0.0.1", port: 0 });
  port = (gateway.app.server.address() as AddressInfo).port;
});
afterAll(() => gateway?.close());

/** Writes raw bytes on one connection and collects everything the gateway sends until it closes or `idleMs` pass. */
function exchange(chunks: (string | Buffer)[], idleMs = 1_500): Promise<{ text: string; reset: boolean }> {
  return new Promise((resolve) => {
    const socket = connect(port, "127.0.0.1");
    const received: Buffer[] = [];
    let reset = false;
    let idle: NodeJS.Timeout | undefined;
    const finish = () => {
      clearTimeout(idle);
      socket.destroy();
      resolve({ text: Buffer.concat(received).toString("latin1"), reset });
    };
    const armIdle = () => {
      clearTimeout(idle);
      idle = setTimeout(finish, idleMs);
    };
    socket.on("data", (chunk) => {
      received.push(chunk);
      armIdle();
    });
    socket.on("error", (error: NodeJS.ErrnoException) => {
      reset = error.code === "ECONNRESET" || error.code === "EPIPE";
    });
    socket.on("close", finish);
    socket.on("connect", () => {
      for (const chunk of chunks) socket.write(chunk);
      armIdle();
    });
  });
}

// Each answer starts right after the previous body (no line break between them).
const statusLines = (text: string) => [...text.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => Number(match[1]));

describe("a refused body", () => {
  it("over the inline upload's limit is answered 413 naming the limit, and the connection serves the next request", async () => {
    // The fuzzer's case: 1,398,106 two-byte characters, twice the route's limit, sent in full.
    const body = JSON.stringify({ filename: "a.mp4", base64: "é".repeat(1_398_106) });
    const length = Buffer.byteLength(body);
    expect(length).toBeGreaterThan(INLINE_UPLOAD_BODY_LIMIT);
    for (let round = 0; round < 5; round++) {
      const { text, reset } = await exchange([
        `POST /uploads/inline HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${length}\r\n\r\n`,
        body,
        "GET /no-such-route HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
      ]);
      expect(reset).toBe(false);
      expect(statusLines(text)).toEqual([413, 404]);
      expect(text).toContain(`{"error":{"code":"PAYLOAD_TOO_LARGE","message":"Request body is larger than ${INLINE_UPLOAD_BODY_LIMIT} bytes"}}`);
      expect(text.split("\r\n\r\n")[0]).not.toMatch(/^connection: close/im);
    }
  });

  it("that is malformed JSON keeps the connection too", async () => {
    const body = "{not json";
    const { text } = await exchange([
      `POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`,
      "GET /no-such-route HTTP/1.1\r\nHost: x\r\nConnection: close\r\n\r\n",
    ]);
    expect(statusLines(text)).toEqual([400, 404]);
  });

  it("declared larger than the drain bound, or of unknown length, is refused and the connection closed", async () => {
    const declaredHuge = await exchange([
      `POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${REFUSED_BODY_DRAIN_MAX_BYTES + 1}\r\n\r\n{`,
    ]);
    expect(statusLines(declaredHuge.text)).toEqual([413]);
    expect(declaredHuge.text).toMatch(/^connection: close/im);

    const chunk = `${"x".repeat(64 * 1024)}`;
    const chunked = await exchange([
      "POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n",
      ...Array.from({ length: 20 }, () => `${chunk.length.toString(16)}\r\n${chunk}\r\n`),
    ]);
    expect(statusLines(chunked.text)).toEqual([413]);
    expect(chunked.text).toMatch(/^connection: close/im);
  });

  it("closed with its connection leaves no body deadline armed (it held the request for a minute)", async () => {
    const armed = vi.spyOn(globalThis, "setTimeout");
    try {
      const declaredHuge = await exchange([
        `POST /jobs HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: ${REFUSED_BODY_DRAIN_MAX_BYTES + 1}\r\n\r\n{`,
      ]);
      expect(statusLines(declaredHuge.text)).toEqual([413]);
      const deadlines = armed.mock.calls
        .map((call, index) => ({ delay: call[1], timer: armed.mock.results[index]!.value as NodeJS.Timeout }))
        .filter(({ delay }) => delay === BODY_DEADLINE_MS)
        .map(({ timer }) => timer);
      expect(deadlines).toHaveLength(1);
      // Node marks a timer destroyed once it has been cleared; the gateway's side of the socket closes just after ours.
      const cleared = () => deadlines.every((timer) => (timer as unknown as { _destroyed: boolean })._destroyed);
      for (let waited = 0; waited < 2_000 && !cleared(); waited += 20) await new Promise((resolve) => setTimeout(resolve, 20));
      expect(cleared()).toBe(true);
    } finally {
      armed.mockRestore();
    }
  });
});
