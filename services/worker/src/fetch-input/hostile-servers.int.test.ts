import { spawn, execFileSync, type ChildProcess } from "node:child_process";
import { once } from "node:events";
import { createReadStream, existsSync } from "node:fs";
import { mkdtemp, readdir, readFile, readlink, rm, stat, writeFile } from "node:fs/promises";
import { createServer, type AddressInfo, type Server, type Socket } from "node:net";
import { tmpdir } from "node:os";
import path from "node:path";
import { createInterface } from "node:readline";
import { gzipSync } from "node:zlib";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { JobFailure } from "../job-failure.js";
import { isForbiddenAddress } from "./address-policy.js";
import { fetchInput } from "./fetch-input.js";
import { createInputAgent, type InputAgent } from "./guarded-agent.js";

/**
 * Input servers that misbehave on purpose, over real sockets. For each: the process stays up (no uncaught exception
 * or unhandled rejection), the download rejects with INPUT_ERROR or succeeds where the response is valid, and no
 * file descriptor or connection is left open afterwards.
 */

let dir: string;
let counter = 0;
const uncaught: unknown[] = [];
const recordUncaught = (error: unknown) => uncaught.push(error);

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "rb-hostile-"));
  process.on("uncaughtException", recordUncaught);
  process.on("unhandledRejection", recordUncaught);
});

afterAll(async () => {
  process.off("uncaughtException", recordUncaught);
  process.off("unhandledRejection", recordUncaught);
  await rm(dir, { recursive: true, force: true });
});

beforeEach(() => {
  uncaught.length = 0;
});

afterEach(async () => {
  // Late socket events (a parser error after the response, a reset) would surface here.
  await new Promise((resolve) => setTimeout(resolve, 50));
  expect(uncaught).toEqual([]);
  expect(await openFilesUnder(dir)).toEqual([]);
});

/** Paths under `root` this process still holds open (Linux: /proc/self/fd). */
async function openFilesUnder(root: string): Promise<string[]> {
  const open: string[] = [];
  for (const fd of await readdir("/proc/self/fd")) {
    const target = await readlink(`/proc/self/fd/${fd}`).catch(() => "");
    if (target.startsWith(root)) open.push(target);
  }
  return open;
}

/** A raw TCP server whose handler writes whatever bytes it likes; it tracks every connection it accepted. */
async function rawServer(handle: (socket: Socket, request: string) => void, host = "127.0.0.1"): Promise<RawServer> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: Server = createServer((socket) => {
    accepted += 1;
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
    socket.on("error", () => undefined);
    let head = "";
    const onData = (chunk: Buffer) => {
      head += chunk.toString("latin1");
      if (!head.includes("\r\n\r\n")) return;
      socket.off("data", onData);
      handle(socket, head);
    };
    socket.on("data", onData);
  });
  server.listen(0, host);
  await once(server, "listening");
  const { port } = server.address() as AddressInfo;
  return {
    url: (pathname = "/input.mp4") => `http://${host}:${port}${pathname}`,
    port,
    accepted: () => accepted,
    async allClosed() {
      const deadline = Date.now() + 3000;
      while (sockets.size > 0 && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 20));
      return sockets.size === 0;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

interface RawServer {
  url(pathname?: string): string;
  port: number;
  accepted(): number;
  /** Whether every connection was closed by the client within 3 s. */
  allClosed(): Promise<boolean>;
  close(): Promise<void>;
}

const development = createInputAgent({ allowPrivateAddresses: true, connectTimeoutMs: 300, headersTimeoutMs: 300, bodyIdleTimeoutMs: 300 });
afterAll(() => development.close());

function destination(): string {
  return path.join(dir, `download-${counter++}`);
}

function download(url: string, options: { agent?: InputAgent; maxBytes?: number; timeoutMs?: number; to?: string } = {}) {
  return fetchInput({
    name: "source",
    url,
    destination: options.to ?? destination(),
    maxBytes: options.maxBytes ?? 5 * 1024 * 1024,
    timeoutMs: options.timeoutMs ?? 5000,
    agent: options.agent ?? development,
    signal: new AbortController().signal,
  });
}

async function inputErrorOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(() => undefined, (thrown: unknown) => thrown);
  expect(error).toBeInstanceOf(JobFailure);
  expect(error).toMatchObject({ code: "INPUT_ERROR" });
  return (error as JobFailure).message;
}

const body = Buffer.alloc(200_000, 7);

/** Runs one hostile server through a download and checks the socket hygiene every case shares. */
async function against(handle: (socket: Socket, request: string) => void, run: (server: RawServer, to: string) => Promise<void>): Promise<void> {
  const server = await rawServer(handle);
  const to = destination();
  try {
    await run(server, to);
    expect(await server.allClosed(), "the client closed its connection").toBe(true);
  } finally {
    await server.close();
  }
}

describe("input servers that misbehave", () => {
  it("a server that closes mid-body (Content-Length): INPUT_ERROR, no partial file kept", async () => {
    await against(
      (socket) => {
        socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`);
        socket.end(body.subarray(0, 50_000));
      },
      async (server, to) => {
        expect(await inputErrorOf(download(server.url(), { to }))).toBe("inputs.source: the download ended before the whole file arrived");
        expect(existsSync(to)).toBe(false);
      },
    );
  });

  it("a server that resets the connection mid-body (chunked): INPUT_ERROR", async () => {
    await against(
      (socket) => {
        socket.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        socket.write(`${(50_000).toString(16)}\r\n`);
        socket.write(body.subarray(0, 50_000));
        socket.write("\r\n", () => socket.resetAndDestroy());
      },
      async (server) => {
        expect(await inputErrorOf(download(server.url()))).toMatch(/^inputs\.source: (the download ended before the whole file arrived|could not be fetched \(ECONNRESET\))$/);
      },
    );
  });

  it("a close-delimited HTTP/1.0 body without Content-Length succeeds when complete", async () => {
    await against(
      (socket) => {
        socket.write("HTTP/1.0 200 OK\r\nContent-Type: video/mp4\r\n\r\n");
        socket.end(body);
      },
      async (server, to) => {
        await expect(download(server.url(), { to })).resolves.toEqual({ size: body.length, contentType: "video/mp4" });
        expect((await readFile(to)).equals(body)).toBe(true);
      },
    );
  });

  it("a Content-Length larger than the body sent: INPUT_ERROR", async () => {
    await against(
      (socket) => {
        socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length + 1000}\r\n\r\n`);
        socket.end(body);
      },
      async (server) => {
        expect(await inputErrorOf(download(server.url()))).toBe("inputs.source: the download ended before the whole file arrived");
      },
    );
  });

  it("a Content-Length smaller than the body sent: exactly the declared bytes are kept", async () => {
    await against(
      (socket) => {
        socket.write(`HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n`);
        socket.end(body);
      },
      async (server, to) => {
        await expect(download(server.url(), { to })).resolves.toMatchObject({ size: 1000 });
        expect((await stat(to)).size).toBe(1000);
      },
    );
  });

  it("a Content-Length above the plan's limit is refused before the body is read", async () => {
    await against(
      (socket) => {
        socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${10 * 1024 * 1024 * 1024}\r\n\r\n`);
        socket.write(body);
      },
      async (server) => {
        expect(await inputErrorOf(download(server.url(), { maxBytes: 100_000 }))).toBe("inputs.source: is larger than the plan's input limit of 100000 bytes");
      },
    );
  });

  it("a body without Content-Length that grows past the limit is cut off by the counter", async () => {
    await against(
      (socket) => {
        socket.write("HTTP/1.0 200 OK\r\n\r\n");
        const flood = () => {
          while (!socket.destroyed && socket.write(body));
          if (!socket.destroyed) socket.once("drain", flood);
        };
        flood();
      },
      async (server, to) => {
        expect(await inputErrorOf(download(server.url(), { maxBytes: 1_000_000, to }))).toBe("inputs.source: is larger than the plan's input limit of 1000000 bytes");
        expect(existsSync(to)).toBe(false);
      },
    );
  });

  it("broken chunked encoding: INPUT_ERROR", async () => {
    await against(
      (socket) => {
        socket.write("HTTP/1.1 200 OK\r\nTransfer-Encoding: chunked\r\n\r\n");
        socket.write("10\r\n0123456789abcdef\r\nnot-a-chunk-size\r\nmore bytes\r\n");
      },
      async (server) => {
        expect(await inputErrorOf(download(server.url()))).toBe("inputs.source: the server sent an invalid HTTP response");
      },
    );
  });

  it("a server that trickles one byte a second hits the whole-download deadline", async () => {
    const timers: NodeJS.Timeout[] = [];
    await against(
      (socket) => {
        socket.write(`HTTP/1.1 200 OK\r\nContent-Length: 1000\r\n\r\n`);
        const timer = setInterval(() => socket.writable && socket.write("x"), 1000);
        timers.push(timer);
        socket.on("close", () => clearInterval(timer));
      },
      async (server) => {
        // Each byte re-arms the body-idle deadline, so only the whole-download one can stop it.
        const slowAgent = createInputAgent({ allowPrivateAddresses: true, connectTimeoutMs: 1000, headersTimeoutMs: 1000, bodyIdleTimeoutMs: 2000 });
        const started = Date.now();
        expect(await inputErrorOf(download(server.url(), { agent: slowAgent, timeoutMs: 2500 }))).toBe("inputs.source: timed out after 3 s");
        expect(Date.now() - started).toBeLessThan(4000);
        await slowAgent.close();
      },
    );
    for (const timer of timers) clearInterval(timer);
  });

  it("a server that goes silent mid-body hits the body-idle deadline", async () => {
    await against(
      (socket) => {
        socket.write(`HTTP/1.1 200 OK\r\nContent-Length: ${body.length}\r\n\r\n`);
        socket.write(body.subarray(0, 1000));
      },
      async (server) => {
        expect(await inputErrorOf(download(server.url()))).toBe("inputs.source: the download stalled for 300 ms");
      },
    );
  });

  it("a server that accepts the request and never answers hits the headers deadline", async () => {
    await against(
      () => undefined,
      async (server) => {
        expect(await inputErrorOf(download(server.url()))).toBe("inputs.source: the server did not answer within 300 ms");
      },
    );
  });

  it("1 MB of response headers: INPUT_ERROR", async () => {
    await against(
      (socket) => {
        socket.write("HTTP/1.1 200 OK\r\n");
        for (let index = 0; index < 1024 && socket.writable; index++) socket.write(`X-Filler-${index}: ${"a".repeat(1000)}\r\n`);
        if (socket.writable) socket.end("Content-Length: 0\r\n\r\n");
      },
      async (server) => {
        expect(await inputErrorOf(download(server.url()))).toBe("inputs.source: the server sent too large response headers");
      },
    );
  });

  it("a gzip bomb is stored as served, never decompressed", async () => {
    const bomb = gzipSync(Buffer.alloc(50 * 1024 * 1024));
    let acceptEncoding: string | undefined;
    await against(
      (socket, request) => {
        acceptEncoding = /^accept-encoding: *(.*)$/im.exec(request)?.[1]?.trim();
        socket.write(`HTTP/1.1 200 OK\r\nContent-Encoding: gzip\r\nContent-Length: ${bomb.length}\r\nConnection: close\r\n\r\n`);
        socket.end(bomb);
      },
      async (server, to) => {
        await expect(download(server.url(), { to, maxBytes: 1024 * 1024 })).resolves.toMatchObject({ size: bomb.length });
        expect((await readFile(to)).equals(bomb)).toBe(true);
        expect(acceptEncoding).toBe("identity");
      },
    );
  });

  it("an https server whose TLS handshake stalls hits the connect deadline", async () => {
    const server = await rawServer(() => undefined);
    try {
      const started = Date.now();
      expect(await inputErrorOf(download(`https://127.0.0.1:${server.port}/input.mp4`))).toBe("inputs.source: connection timed out");
      expect(Date.now() - started).toBeLessThan(2000);
      expect(server.accepted()).toBe(1);
      expect(await server.allClosed()).toBe(true);
    } finally {
      await server.close();
    }
  });
});

describe("redirects into private addresses with the SSRF guard on", () => {
  // The production policy, except for the hostile server's own address: the first hop is allowed so that what is
  // shown refused is the redirect.
  let target: RawServer;
  beforeAll(async () => {
    target = await rawServer((socket) => socket.end("HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok"), "127.0.0.2");
  });
  afterAll(() => target.close());

  it.each([
    ["another loopback address", () => target.url()],
    ["IPv6 loopback", () => `http://[::1]:${target.port}/input.mp4`],
    ["an IPv4-mapped loopback", () => `http://[::ffff:127.0.0.2]:${target.port}/input.mp4`],
    ["the cloud metadata address", () => "http://169.254.169.254/latest/meta-data/"],
    ["a private network", () => "http://10.0.0.1/input.mp4"],
  ])("refuses a redirect to %s", async (_label, location) => {
    const guarded = createInputAgent({ allowPrivateAddresses: false, addressPolicy: (address) => address !== "127.0.0.1" && isForbiddenAddress(address), connectTimeoutMs: 300 });
    await against(
      (socket) => socket.end(`HTTP/1.1 302 Found\r\nLocation: ${location()}\r\nContent-Length: 0\r\n\r\n`),
      async (server) => {
        expect(await inputErrorOf(download(server.url(), { agent: guarded }))).toBe("inputs.source: the URL points to an address that is not allowed");
        expect(server.accepted()).toBe(1);
      },
    );
    expect(target.accepted()).toBe(0);
    await guarded.close();
  });

  it("follows the same redirect when the target is allowed (the guard is what refused it)", async () => {
    await against(
      (socket) => socket.end(`HTTP/1.1 302 Found\r\nLocation: ${target.url()}\r\nContent-Length: 0\r\n\r\n`),
      async (server) => {
        await expect(download(server.url())).resolves.toMatchObject({ size: 2 });
      },
    );
    expect(target.accepted()).toBe(1);
  });
});

/**
 * The crash this module was rewritten for (nodejs/undici#5360): python's http.server (HTTP/1.0 semantics, the
 * connection closes after the body) serving ~10 MB to two downloads at once whose disk falls behind. undici 7 paused
 * its parser under the backpressure, the socket ended, and `Parser.finish` threw `assert(!this.paused)` from a
 * socket event, killing the process. The destinations here are FIFOs read slowly, a disk that keeps pushing back.
 */
describe("python3 -m http.server, two concurrent downloads into slow disks", () => {
  let python: ChildProcess;
  let baseUrl: string;
  let served: Buffer;

  beforeAll(async () => {
    const root = path.join(dir, "served");
    execFileSync("mkdir", ["-p", root]);
    served = Buffer.alloc(10 * 1024 * 1024);
    for (let offset = 0; offset < served.length; offset += 4) served.writeUInt32LE((offset * 2654435761) >>> 0, offset);
    await writeFile(path.join(root, "big.bin"), served);
    python = spawn("python3", ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", root], { stdio: ["ignore", "pipe", "pipe"] });
    const lines = createInterface({ input: python.stdout! });
    const port = await new Promise<string>((resolve, reject) => {
      python.once("exit", (code) => reject(new Error(`python3 -m http.server exited with ${code}`)));
      lines.on("line", (line) => {
        const match = /port (\d+)/.exec(line);
        if (match) resolve(match[1]!);
      });
    });
    baseUrl = `http://127.0.0.1:${port}`;
  });

  afterAll(() => {
    python?.kill();
  });

  /** A FIFO at `fifo` whose reader takes 16 KB, then waits 2 ms: the download's writes back up behind it. */
  async function slowDisk(fifo: string): Promise<() => Promise<Buffer>> {
    execFileSync("mkfifo", [fifo]);
    const reader = createReadStream(fifo, { highWaterMark: 16 * 1024 });
    const chunks: Buffer[] = [];
    reader.on("data", (chunk) => {
      chunks.push(chunk as Buffer);
      reader.pause();
      setTimeout(() => reader.resume(), 2);
    });
    const ended = once(reader, "close");
    return async () => {
      await ended;
      return Buffer.concat(chunks);
    };
  }

  it("both downloads complete with every byte and the process stays up", async () => {
    const fifos = [path.join(dir, "slow-1"), path.join(dir, "slow-2")];
    const readers = await Promise.all(fifos.map((fifo) => slowDisk(fifo)));
    const results = await Promise.all(fifos.map((fifo) => download(`${baseUrl}/big.bin`, { to: fifo, maxBytes: 50 * 1024 * 1024, timeoutMs: 60_000 })));
    expect(results.map((result) => result.size)).toEqual([served.length, served.length]);
    for (const read of readers) expect((await read()).equals(served)).toBe(true);
  }, 60_000);
});
