import { once } from "node:events";
import { createWriteStream } from "node:fs";
import { rm } from "node:fs/promises";
import http from "node:http";
import https from "node:https";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { inputError, JobCancelledError, type JobFailure } from "../job-failure.js";
import { BlockedAddressError } from "@renderbus/address-guard";
import type { InputAgent } from "./guarded-agent.js";

/** Redirects followed per input; each hop goes through the same guarded agent. */
export const MAX_REDIRECTS = 5;

/** Response headers larger than this end the download (a server sending megabytes of headers). */
export const MAX_RESPONSE_HEADER_BYTES = 64 * 1024;

export interface FetchInputOptions {
  /** The input's name, used in messages (`inputs.source: ...`). */
  name: string;
  url: string;
  destination: string;
  maxBytes: number;
  /**
   * Whole-download deadline, redirects included, for a download slower than `minBytesPerSecond`; without that rate,
   * for every download.
   */
  timeoutMs: number;
  /**
   * Past `timeoutMs`, a download goes on while its average rate since its start is at least this (INPUT_MIN_BYTES_PER_SECOND),
   * up to `maxBytes` at this rate: a plan's 5 GB input cannot arrive in the 2 minutes a 100 MB one gets.
   */
  minBytesPerSecond?: number;
  /** How to connect (SSRF guard) and the connect / headers / body-idle deadlines. */
  agent: InputAgent;
  /** Aborted when the job is cancelled. */
  signal: AbortSignal;
}

function formatBytes(bytes: number): string {
  if (bytes >= 1024 ** 3) return `${+(bytes / 1024 ** 3).toFixed(1)} GB`;
  if (bytes >= 1024 ** 2) return `${+(bytes / 1024 ** 2).toFixed(1)} MB`;
  return `${bytes} bytes`;
}

const seconds = (ms: number) => (ms < 1000 ? `${ms} ms` : `${Math.round(ms / 1000)} s`);

class TooLargeError extends Error {}

/** Past the whole-download deadline, the body arrives slower on average than the minimum rate. */
class TooSlowError extends Error {
  constructor(readonly bytesPerSecond: number) {
    super("download too slow");
  }
}

/** The connection ended before a body with a Content-Length or chunked framing was whole. */
class TruncatedError extends Error {}

/** A deadline of one phase of one request passed (see {@link InputAgent}). */
class StalledError extends Error {
  constructor(readonly phase: "connect" | "headers" | "body") {
    super(`${phase} timed out`);
  }
}

/**
 * One request's phase deadline. It destroys the request when it fires; during the body it is an idle timer that is
 * re-armed by each chunk and stopped while the body is paused by our own backpressure (a slow disk is not a stall).
 */
class PhaseTimer {
  private timer: NodeJS.Timeout | undefined;
  fired: StalledError | undefined;

  constructor(private readonly request: http.ClientRequest) {}

  arm(phase: StalledError["phase"], ms: number): void {
    this.clear();
    this.timer = setTimeout(() => {
      this.fired = new StalledError(phase);
      this.request.destroy(this.fired);
    }, ms);
  }

  clear(): void {
    if (this.timer) clearTimeout(this.timer);
    this.timer = undefined;
  }
}

interface Exchange {
  request: http.ClientRequest;
  response: http.IncomingMessage;
  timer: PhaseTimer;
  /** Re-arms the body-idle deadline (a chunk arrived). */
  bodyProgress(): void;
  /** The first error the request reported (a parser error such as HPE_INVALID_CHUNK_SIZE names the real cause). */
  requestError(): Error | undefined;
}

/**
 * Sends one GET and resolves once the response headers are in. The request keeps an `error` listener for its whole
 * life and every deadline ends in `request.destroy(error)`, so nothing a server does can surface as an uncaught
 * exception.
 */
function openResponse(url: URL, agent: InputAgent, signal: AbortSignal): Promise<Exchange> {
  return new Promise<Exchange>((resolve, reject) => {
    const client = url.protocol === "https:" ? https : http;
    let request: http.ClientRequest;
    try {
      request = client.get(url, {
        agent: agent.agentFor(url.protocol === "https:" ? "https:" : "http:"),
        // We store the bytes as served and never decompress (no gzip bomb can expand on our disk).
        headers: { "user-agent": "Renderbus-Worker", "accept-encoding": "identity" },
        maxHeaderSize: MAX_RESPONSE_HEADER_BYTES,
      });
    } catch (error) {
      reject(error as Error);
      return;
    }
    let firstError: Error | undefined;
    const timer = new PhaseTimer(request);
    timer.arm("connect", agent.connectTimeoutMs);
    request.on("socket", (socket) => {
      const connected = () => timer.arm("headers", agent.headersTimeoutMs);
      if (url.protocol === "https:") socket.once("secureConnect", connected);
      else if (socket.connecting) socket.once("connect", connected);
      else connected();
    });
    request.on("error", (error) => {
      firstError ??= error;
      timer.clear();
      reject(error);
    });
    request.on("response", (response) => {
      response.on("error", (error) => {
        firstError ??= error;
      });
      const bodyProgress = () => timer.arm("body", agent.bodyIdleTimeoutMs);
      bodyProgress();
      // No "data" listener here: it would start the flow before the body has somewhere to go.
      response.on("pause", () => timer.clear());
      response.on("resume", bodyProgress);
      response.on("end", () => timer.clear());
      resolve({ request, response, timer, bodyProgress, requestError: () => firstError });
    });
    const abort = () => request.destroy(signal.reason instanceof Error ? signal.reason : new Error("aborted"));
    signal.addEventListener("abort", abort, { once: true });
    request.on("close", () => {
      timer.clear();
      signal.removeEventListener("abort", abort);
    });
    if (signal.aborted) abort();
  });
}

/** Writes the body to `destination` through a byte counter; resolves with the size once the whole body is on disk. */
async function saveBody(exchange: Exchange, destination: string, maxBytes: number, received: { bytes: number }): Promise<number> {
  let size = 0;
  const cap = new Transform({
    transform(chunk: Buffer, _encoding, callback) {
      size += chunk.length;
      received.bytes = size;
      if (size > maxBytes) return callback(new TooLargeError());
      exchange.bodyProgress();
      callback(null, chunk);
    },
  });
  const file = createWriteStream(destination);
  try {
    // pipeline pauses the socket while the disk is behind, and destroys every stream (the file too) on an error.
    await pipeline(exchange.response, cap, file);
  } catch (error) {
    if (!file.closed) await once(file, "close").catch(() => undefined);
    await rm(destination, { force: true }).catch(() => undefined);
    throw error;
  }
  // A close-delimited body (HTTP/1.0, no Content-Length) ends when the server closes; one that names its length or
  // is chunked is only complete when all of it arrived.
  if (!exchange.response.complete) {
    await rm(destination, { force: true }).catch(() => undefined);
    throw new TruncatedError();
  }
  return size;
}

const codeOf = (error: unknown): string | undefined => (error as NodeJS.ErrnoException | undefined)?.code;

/** The customer-facing INPUT_ERROR for a download that threw `error`, with the response in hand if there was one. */
function describeFailure(
  error: unknown,
  exchange: Exchange | undefined,
  context: { name: string; maxBytes: number; timeoutMs: number; timedOut: boolean; deadlineMs: number; tooSlow: TooSlowError | undefined; minBytesPerSecond: number | undefined; agent: InputAgent },
): JobFailure {
  const { name, agent } = context;
  const cause = causeOf(error);
  if (cause instanceof TooLargeError) return inputError(`inputs.${name}: is larger than the plan's input limit of ${formatBytes(context.maxBytes)}`);
  if (cause instanceof BlockedAddressError) return inputError(`inputs.${name}: the URL points to an address that is not allowed`);
  if (context.tooSlow) {
    return inputError(
      `inputs.${name}: arrived at ${formatBytes(Math.round(context.tooSlow.bytesPerSecond))}/s, under the ${formatBytes(context.minBytesPerSecond ?? 0)}/s a download must keep up after its first ${seconds(context.timeoutMs)}`,
    );
  }
  if (context.timedOut) return inputError(`inputs.${name}: timed out after ${seconds(context.deadlineMs)}`);
  const stalled = exchange?.timer.fired ?? (cause instanceof StalledError ? cause : undefined);
  if (stalled?.phase === "connect") return inputError(`inputs.${name}: connection timed out`);
  if (stalled?.phase === "headers") return inputError(`inputs.${name}: the server did not answer within ${seconds(agent.headersTimeoutMs)}`);
  if (stalled?.phase === "body") return inputError(`inputs.${name}: the download stalled for ${seconds(agent.bodyIdleTimeoutMs)}`);
  // A parser error during the body reaches the request; the body stream itself only sees "aborted".
  const code = [codeOf(exchange?.requestError()), codeOf(cause)].find((candidate) => candidate?.startsWith("HPE_")) ?? codeOf(cause);
  if (code === "HPE_HEADER_OVERFLOW") return inputError(`inputs.${name}: the server sent too large response headers`);
  if (code?.startsWith("HPE_")) return inputError(`inputs.${name}: the server sent an invalid HTTP response`);
  if (cause instanceof TruncatedError || (exchange && !exchange.response.complete)) {
    return inputError(`inputs.${name}: the download ended before the whole file arrived`);
  }
  return inputError(`inputs.${name}: could not be fetched${code ? ` (${code})` : ""}`);
}

function causeOf(error: unknown): unknown {
  let current = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current instanceof BlockedAddressError || current instanceof TooLargeError || current instanceof TooSlowError || current instanceof StalledError || current instanceof TruncatedError) {
      return current;
    }
    if (!current.cause) break;
    current = current.cause;
  }
  return current;
}

/**
 * Downloads an input URL to `destination` with Node's core http/https clients: a size cap (by Content-Length and by
 * counting), a whole-download deadline (extended for a download that keeps up the minimum rate) plus connect /
 * headers / body-idle deadlines, at most MAX_REDIRECTS redirects, each hop through the SSRF-guarded agent.
 * @returns the number of bytes written and the declared content type.
 * @throws JobFailure INPUT_ERROR (unreachable, refused address, HTTP error, invalid or cut-off response, too large,
 *   timed out), or JobCancelledError when `signal` fires.
 */
export async function fetchInput(options: FetchInputOptions): Promise<{ size: number; contentType: string | undefined }> {
  const { name, maxBytes, agent, minBytesPerSecond } = options;
  const received = { bytes: 0 };
  const rate = minBytesPerSecond ? keepUpWith(minBytesPerSecond, options.timeoutMs, received) : undefined;
  // A download that keeps up the rate is done by then: maxBytes at that rate.
  const deadlineMs = rate ? Math.max(options.timeoutMs, Math.ceil((maxBytes / rate.minBytesPerSecond) * 1000)) : options.timeoutMs;
  const timeout = AbortSignal.timeout(deadlineMs);
  const signal = AbortSignal.any([options.signal, timeout, ...(rate ? [rate.signal] : [])]);
  let url = options.url;
  let exchange: Exchange | undefined;
  try {
    for (let hop = 0; ; hop++) {
      const parsed = URL.canParse(url) ? new URL(url) : undefined;
      if (!parsed) throw inputError(`inputs.${name}: is not a valid URL`);
      if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw inputError(`inputs.${name}: only http and https URLs can be fetched`);
      exchange = undefined;
      exchange = await openResponse(parsed, agent, signal);
      const { response } = exchange;
      const status = response.statusCode ?? 0;
      if (status >= 300 && status < 400 && response.headers.location) {
        exchange.request.destroy();
        if (hop >= MAX_REDIRECTS) throw inputError(`inputs.${name}: more than ${MAX_REDIRECTS} redirects`);
        url = new URL(response.headers.location, parsed).toString();
        continue;
      }
      if (status < 200 || status >= 300) {
        exchange.request.destroy();
        throw inputError(`inputs.${name}: could not be fetched (HTTP ${status})`);
      }
      const declared = Number(response.headers["content-length"]);
      if (Number.isFinite(declared) && declared > maxBytes) {
        exchange.request.destroy();
        throw inputError(`inputs.${name}: is larger than the plan's input limit of ${formatBytes(maxBytes)}`);
      }
      const size = await saveBody(exchange, options.destination, maxBytes, received);
      const contentType = response.headers["content-type"];
      return { size, contentType };
    }
  } catch (error) {
    if (options.signal.aborted) throw new JobCancelledError();
    if (error instanceof Error && error.name === "JobFailure") throw error;
    const tooSlow = rate?.signal.aborted ? (rate.signal.reason as TooSlowError) : undefined;
    throw describeFailure(error, exchange, { name, maxBytes, timeoutMs: options.timeoutMs, timedOut: timeout.aborted, deadlineMs, tooSlow, minBytesPerSecond, agent });
  } finally {
    rate?.stop();
    exchange?.request.destroy();
  }
}

/** How often the average rate is checked once the grace period is over. */
const RATE_CHECK_INTERVAL_MS = 1000;

/**
 * A signal that aborts (with a {@link TooSlowError}) when, after `graceMs`, the bytes `received` since now average
 * less than `minBytesPerSecond`: what curl's --speed-limit does, on the average rather than a window, so a download
 * that started fast is not cut by one slow stretch.
 */
function keepUpWith(minBytesPerSecond: number, graceMs: number, received: { bytes: number }) {
  const started = performance.now();
  const controller = new AbortController();
  let interval: NodeJS.Timeout | undefined;
  const check = () => {
    const bytesPerSecond = received.bytes / ((performance.now() - started) / 1000);
    if (bytesPerSecond < minBytesPerSecond) controller.abort(new TooSlowError(bytesPerSecond));
  };
  const grace = setTimeout(() => {
    check();
    interval = setInterval(check, RATE_CHECK_INTERVAL_MS);
  }, graceMs);
  return {
    minBytesPerSecond,
    signal: controller.signal,
    stop() {
      clearTimeout(grace);
      clearInterval(interval);
    },
  };
}
