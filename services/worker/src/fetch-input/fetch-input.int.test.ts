import { mkdtemp, rm, stat } from "node:fs/promises";
import { tmpdir } from "node:os";
import { createServer } from "node:http";
import path from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { JobCancelledError, JobFailure } from "../job-failure.js";
import { createTestMedia, serveFiles } from "../testing/test-media.js";
import { fetchInput } from "./fetch-input.js";
import { createInputAgent } from "./guarded-agent.js";

let dir: string;
let server: { url: string; close(): Promise<void> };
const development = createInputAgent({ allowPrivateAddresses: true, connectTimeoutMs: 2000 });
const production = createInputAgent({ allowPrivateAddresses: false, connectTimeoutMs: 2000 });

beforeAll(async () => {
  dir = await mkdtemp(path.join(tmpdir(), "rb-fetch-"));
  await createTestMedia(dir);
  server = await serveFiles(dir);
}, 120_000);

afterAll(async () => {
  await server.close();
  await Promise.all([development.close(), production.close()]);
  await rm(dir, { recursive: true, force: true });
});

let counter = 0;
function fetchTo(url: string, options: { agent?: typeof development; maxBytes?: number; timeoutMs?: number; minBytesPerSecond?: number; signal?: AbortSignal } = {}) {
  return fetchInput({
    name: "source",
    url,
    destination: path.join(dir, `download-${counter++}`),
    maxBytes: options.maxBytes ?? 10 * 1024 * 1024,
    timeoutMs: options.timeoutMs ?? 5000,
    ...(options.minBytesPerSecond ? { minBytesPerSecond: options.minBytesPerSecond } : {}),
    agent: options.agent ?? development,
    signal: options.signal ?? new AbortController().signal,
  });
}

async function failureOf(promise: Promise<unknown>): Promise<JobFailure> {
  const error = await promise.then(() => undefined, (thrown: unknown) => thrown);
  expect(error).toBeInstanceOf(JobFailure);
  return error as JobFailure;
}

describe("fetching inputs", () => {
  it("downloads a file and reports its size", async () => {
    const result = await fetchTo(`${server.url}/files/video.mp4`);
    expect(result.size).toBe((await stat(path.join(dir, "video.mp4"))).size);
  });

  it("follows up to 5 redirects and refuses a sixth", async () => {
    await expect(fetchTo(`${server.url}/redirect/5/subs.srt`)).resolves.toMatchObject({ size: expect.any(Number) });
    const failure = await failureOf(fetchTo(`${server.url}/redirect/6/subs.srt`));
    expect(failure).toMatchObject({ code: "INPUT_ERROR", message: "inputs.source: more than 5 redirects" });
  });

  it("fails with INPUT_ERROR when the input is larger than the plan allows", async () => {
    const failure = await failureOf(fetchTo(`${server.url}/files/video.mp4`, { maxBytes: 1000 }));
    expect(failure).toMatchObject({ code: "INPUT_ERROR" });
    expect(failure.message).toMatch(/^inputs\.source: is larger than the plan's input limit/);
  });

  it("fails with INPUT_ERROR when the host is unreachable", async () => {
    const failure = await failureOf(fetchTo("http://127.0.0.1:1/video.mp4"));
    expect(failure).toMatchObject({ code: "INPUT_ERROR", message: "inputs.source: could not be fetched (ECONNREFUSED)" });
  });

  it("refuses URLs that are not http(s)", async () => {
    expect((await failureOf(fetchTo("file:///etc/passwd"))).message).toBe("inputs.source: only http and https URLs can be fetched");
    expect((await failureOf(fetchTo("not a url"))).message).toBe("inputs.source: is not a valid URL");
  });

  it("stops a download when the job is cancelled", async () => {
    const controller = new AbortController();
    controller.abort();
    await expect(fetchTo(`${server.url}/files/video.mp4`, { signal: controller.signal })).rejects.toBeInstanceOf(JobCancelledError);
  });
});

/** Serves `total` bytes in chunks of `chunk` every `everyMs`: a link of a known speed. */
async function startPacedServer(total: number, chunk: number, everyMs: number) {
  const paced = createServer((_request, response) => {
    response.writeHead(200, { "content-type": "application/octet-stream", "content-length": total });
    let sent = 0;
    const timer = setInterval(() => {
      const size = Math.min(chunk, total - sent);
      response.write(Buffer.alloc(size, 1));
      sent += size;
      if (sent >= total) {
        clearInterval(timer);
        response.end();
      }
    }, everyMs);
    response.on("close", () => clearInterval(timer));
  });
  await new Promise<void>((done) => paced.listen(0, "127.0.0.1", done));
  return {
    url: `http://127.0.0.1:${(paced.address() as { port: number }).port}/paced.bin`,
    close: () => {
      paced.closeAllConnections();
      return new Promise<void>((done) => paced.close(() => done()));
    },
  };
}

describe("the whole-download deadline, scaled to the plan's input size for a download that keeps up the minimum rate", () => {
  it("lets a download that keeps up INPUT_MIN_BYTES_PER_SECOND go past INPUT_FETCH_TIMEOUT_MS (a large input on a fair link)", async () => {
    // 640 KB at about 320 KB/s: about 2 s, four times the 500 ms deadline, far above the 16 KB/s minimum.
    const paced = await startPacedServer(640 * 1024, 32 * 1024, 100);
    try {
      await expect(fetchTo(paced.url, { timeoutMs: 500, minBytesPerSecond: 16 * 1024 })).resolves.toMatchObject({ size: 640 * 1024 });
      // Without the rate, the same download is cut at the deadline as before.
      expect((await failureOf(fetchTo(paced.url, { timeoutMs: 500 }))).message).toBe("inputs.source: timed out after 500 ms");
    } finally {
      await paced.close();
    }
  });

  it("cuts a download averaging under the minimum rate once INPUT_FETCH_TIMEOUT_MS has passed, naming both rates", async () => {
    // About 5 KB/s against a 16 KB/s minimum: a trickle that would take minutes.
    const paced = await startPacedServer(1024 * 1024, 1024, 200);
    try {
      const failure = await failureOf(fetchTo(paced.url, { timeoutMs: 500, minBytesPerSecond: 16 * 1024 }));
      expect(failure.code).toBe("INPUT_ERROR");
      expect(failure.message).toMatch(/^inputs\.source: arrived at \d+ bytes\/s, under the 16384 bytes\/s a download must keep up after its first 500 ms$/);
    } finally {
      await paced.close();
    }
  });
});

describe("SSRF guard in production mode", () => {
  const port = () => new URL(server.url).port;

  it.each([
    ["a loopback IP", () => `http://127.0.0.1:${port()}/files/video.mp4`],
    ["the cloud metadata address", () => "http://169.254.169.254/latest/meta-data/"],
    ["an IPv4-mapped IPv6 loopback", () => `http://[::ffff:127.0.0.1]:${port()}/files/video.mp4`],
    ["IPv6 loopback", () => `http://[::1]:${port()}/files/video.mp4`],
    ["a private IP", () => "http://10.0.0.1/video.mp4"],
    ["a host name that resolves to loopback", () => `http://localhost:${port()}/files/video.mp4`],
  ])("refuses %s", async (_label, url) => {
    const failure = await failureOf(fetchTo(url(), { agent: production }));
    expect(failure).toMatchObject({ code: "INPUT_ERROR", message: "inputs.source: the URL points to an address that is not allowed" });
  });

  it("re-checks every redirect hop (a redirect into a private address is refused)", async () => {
    // The first hop is itself local here; with the development agent the same chain succeeds.
    await expect(fetchTo(`${server.url}/redirect/2/subs.srt`)).resolves.toBeDefined();
    const failure = await failureOf(fetchTo(`http://localhost:${port()}/redirect/2/subs.srt`, { agent: production }));
    expect(failure.message).toBe("inputs.source: the URL points to an address that is not allowed");
  });
});
