import { createWriteStream } from "node:fs";
import { Transform } from "node:stream";
import { pipeline } from "node:stream/promises";
import { errors as undiciErrors, request, type Dispatcher } from "undici";
import { inputError, JobCancelledError } from "../job-failure.js";
import { ForbiddenAddressError } from "./guarded-agent.js";

/** Redirects followed per input; each hop goes through the same guarded agent. */
export const MAX_REDIRECTS = 5;

export interface FetchInputOptions {
  /** The input's name, used in messages (`inputs.source: ...`). */
  name: string;
  url: string;
  destination: string;
  maxBytes: number;
  timeoutMs: number;
  agent: Dispatcher;
  /** Aborted when the job is cancelled. */
  signal: AbortSignal;
}

function formatBytes(bytes: number): string {
  if (bytes >= 1024 ** 3) return `${+(bytes / 1024 ** 3).toFixed(1)} GB`;
  if (bytes >= 1024 ** 2) return `${+(bytes / 1024 ** 2).toFixed(1)} MB`;
  return `${bytes} bytes`;
}

class TooLargeError extends Error {}

function causeOf(error: unknown): unknown {
  let current = error;
  for (let depth = 0; depth < 5 && current instanceof Error; depth++) {
    if (current instanceof ForbiddenAddressError || current instanceof TooLargeError) return current;
    if (!current.cause) break;
    current = current.cause;
  }
  return current;
}

/**
 * Downloads an input URL to `destination` with a size cap, an overall timeout and at most MAX_REDIRECTS redirects.
 * @returns the number of bytes written.
 * @throws JobFailure INPUT_ERROR (unreachable, refused address, HTTP error, too large, timed out), or
 *   JobCancelledError when `signal` fires.
 */
export async function fetchInput(options: FetchInputOptions): Promise<{ size: number; contentType: string | undefined }> {
  const { name, maxBytes, agent } = options;
  const timeout = AbortSignal.timeout(options.timeoutMs);
  const signal = AbortSignal.any([options.signal, timeout]);
  let url = options.url;
  try {
    for (let hop = 0; ; hop++) {
      const parsed = URL.canParse(url) ? new URL(url) : undefined;
      if (!parsed) throw inputError(`inputs.${name}: is not a valid URL`);
      if (parsed.protocol !== "http:" && parsed.protocol !== "https:") throw inputError(`inputs.${name}: only http and https URLs can be fetched`);
      const response = await request(parsed, { method: "GET", dispatcher: agent, signal, headers: { "user-agent": "Renderbus-Worker" } });
      if (response.statusCode >= 300 && response.statusCode < 400 && response.headers.location) {
        await response.body.dump();
        if (hop >= MAX_REDIRECTS) throw inputError(`inputs.${name}: more than ${MAX_REDIRECTS} redirects`);
        url = new URL(String(response.headers.location), parsed).toString();
        continue;
      }
      if (response.statusCode < 200 || response.statusCode >= 300) {
        await response.body.dump();
        throw inputError(`inputs.${name}: could not be fetched (HTTP ${response.statusCode})`);
      }
      const declared = Number(response.headers["content-length"]);
      if (Number.isFinite(declared) && declared > maxBytes) {
        await response.body.dump();
        throw inputError(`inputs.${name}: is larger than the plan's input limit of ${formatBytes(maxBytes)}`);
      }
      let size = 0;
      const cap = new Transform({
        transform(chunk: Buffer, _encoding, callback) {
          size += chunk.length;
          if (size > maxBytes) return callback(new TooLargeError());
          callback(null, chunk);
        },
      });
      await pipeline(response.body, cap, createWriteStream(options.destination));
      const contentType = response.headers["content-type"];
      return { size, contentType: typeof contentType === "string" ? contentType : undefined };
    }
  } catch (error) {
    if (options.signal.aborted) throw new JobCancelledError();
    if (error instanceof Error && error.name === "JobFailure") throw error;
    const cause = causeOf(error);
    if (cause instanceof TooLargeError) throw inputError(`inputs.${name}: is larger than the plan's input limit of ${formatBytes(maxBytes)}`);
    if (cause instanceof ForbiddenAddressError) throw inputError(`inputs.${name}: the URL points to an address that is not allowed`);
    if (timeout.aborted) throw inputError(`inputs.${name}: timed out after ${Math.round(options.timeoutMs / 1000)} s`);
    if (cause instanceof undiciErrors.ConnectTimeoutError) throw inputError(`inputs.${name}: connection timed out`);
    const code = (cause as NodeJS.ErrnoException | undefined)?.code;
    throw inputError(`inputs.${name}: could not be fetched${code ? ` (${code})` : ""}`);
  }
}
