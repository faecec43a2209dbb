import { randomUUID } from "node:crypto";
import { RenderbusConnectionError, RenderbusError } from "./errors.js";

/** Retry policy for 429 / 503 responses and network errors. */
export interface RetryOptions {
  /** Retries after the first attempt (default 3, so at most 4 attempts). 0 disables retries. */
  maxRetries?: number;
  /** First backoff step in ms (default 500); doubles per retry, with full jitter. */
  baseDelayMs?: number;
  /** Upper bound of one wait, including a server's Retry-After (default 30 s). */
  maxDelayMs?: number;
}

export interface TransportOptions {
  apiKey: string;
  baseUrl: string;
  retry?: RetryOptions;
  /** Per attempt (default 60 s). */
  timeoutMs?: number;
  /** For tests and custom agents. */
  fetch?: typeof fetch;
  userAgent?: string;
}

export interface RequestOptions {
  method: "GET" | "POST" | "PATCH" | "DELETE";
  path: string;
  query?: Record<string, string | number | undefined | null> | undefined;
  body?: unknown;
  /** Sent as `Idempotency-Key`; for routes that take one a key is generated when none is given. */
  idempotencyKey?: string | undefined;
  /** Routes that deduplicate by Idempotency-Key (POST /jobs, POST /batches). */
  idempotent?: boolean;
  timeoutMs?: number;
  signal?: AbortSignal | undefined;
}

const RETRYABLE_STATUS = new Set([429, 503]);
const sleep = (ms: number, signal?: AbortSignal) =>
  new Promise<void>((resolve, reject) => {
    const timer = setTimeout(resolve, ms);
    signal?.addEventListener("abort", () => { clearTimeout(timer); reject(signal.reason); }, { once: true });
  });

/** Backoff before retry number `retry` (0-based): full jitter over base * 2^retry, or the server's Retry-After. */
export function retryDelayMs(retry: number, retryAfterMs: number | null, { baseDelayMs = 500, maxDelayMs = 30_000 }: RetryOptions = {}): number {
  if (retryAfterMs !== null) return Math.min(retryAfterMs, maxDelayMs);
  return Math.round(Math.random() * Math.min(maxDelayMs, baseDelayMs * 2 ** retry));
}

/** `Retry-After` as ms: delta-seconds or an HTTP date (RFC 9110). */
export function parseRetryAfter(value: string | null, now = Date.now()): number | null {
  if (!value) return null;
  if (/^\d+$/.test(value.trim())) return Number(value.trim()) * 1000;
  const date = Date.parse(value);
  return Number.isNaN(date) ? null : Math.max(0, date - now);
}

/**
 * HTTP with the API's conventions: Bearer auth, JSON bodies, `{error:{code,message}}` as RenderbusError, and retries
 * that are safe: a 429 or 503 was not processed, and a POST that creates something carries one Idempotency-Key
 * across all its attempts, so a retry after a lost response replays the first result instead of creating twice.
 */
export class Transport {
  readonly baseUrl: string;
  /** The fetch in use (the option, else the global one); streams use it too. */
  readonly fetchImpl: typeof fetch;

  constructor(private readonly options: TransportOptions) {
    this.baseUrl = options.baseUrl.replace(/\/+$/, "");
    this.fetchImpl = options.fetch ?? globalThis.fetch.bind(globalThis);
  }

  url(path: string, query?: RequestOptions["query"]): string {
    const url = new URL(this.baseUrl + path);
    for (const [name, value] of Object.entries(query ?? {})) if (value !== undefined && value !== null) url.searchParams.set(name, String(value));
    return url.toString();
  }

  headers(extra: Record<string, string> = {}): Record<string, string> {
    return {
      authorization: `Bearer ${this.options.apiKey}`,
      "user-agent": this.options.userAgent ?? "renderbus-sdk-node/0.1.0",
      ...extra,
    };
  }

  /** Sends a request and returns the parsed JSON body (`{data}` or `{data, nextCursor}`). */
  async request<T>(request: RequestOptions): Promise<T> {
    const { maxRetries = 3 } = this.options.retry ?? {};
    const idempotencyKey = request.idempotencyKey ?? (request.idempotent ? randomUUID() : undefined);
    const headers = this.headers({
      accept: "application/json",
      ...(request.body !== undefined ? { "content-type": "application/json" } : {}),
      ...(idempotencyKey ? { "idempotency-key": idempotencyKey } : {}),
    });
    const body = request.body !== undefined ? JSON.stringify(request.body) : undefined;
    // Without an idempotency key, only GET/DELETE are retried after an ambiguous network failure.
    const retryNetwork = request.method === "GET" || request.method === "DELETE" || idempotencyKey !== undefined;

    for (let attempt = 0; ; attempt++) {
      let response: Response;
      try {
        const timeout = AbortSignal.timeout(request.timeoutMs ?? this.options.timeoutMs ?? 60_000);
        response = await this.fetchImpl(this.url(request.path, request.query), {
          method: request.method,
          headers,
          ...(body !== undefined ? { body } : {}),
          signal: request.signal ? AbortSignal.any([request.signal, timeout]) : timeout,
        });
      } catch (error) {
        if (request.signal?.aborted) throw error;
        if (attempt < maxRetries && (retryNetwork || isConnectionRefused(error))) {
          await sleep(retryDelayMs(attempt, null, this.options.retry), request.signal);
          continue;
        }
        throw new RenderbusConnectionError(`Could not reach ${this.baseUrl}: ${describe(error)}`, { cause: error });
      }
      if (response.ok) {
        const text = await response.text();
        return (text ? JSON.parse(text) : undefined) as T;
      }
      const error = await toError(response);
      if (RETRYABLE_STATUS.has(response.status) && attempt < maxRetries) {
        await sleep(retryDelayMs(attempt, error.retryAfterMs, this.options.retry), request.signal);
        continue;
      }
      throw error;
    }
  }
}

/** Builds a RenderbusError from an error response (also used for streams). */
export async function toError(response: Response): Promise<RenderbusError> {
  const requestId = response.headers.get("x-request-id");
  const retryAfterMs = parseRetryAfter(response.headers.get("retry-after"));
  let code = response.status >= 500 ? "INTERNAL_ERROR" : "HTTP_ERROR";
  let message = `HTTP ${response.status}`;
  try {
    const parsed = (await response.json()) as { error?: { code?: string; message?: string } };
    if (parsed?.error?.code) code = parsed.error.code;
    if (parsed?.error?.message) message = parsed.error.message;
  } catch {
    // Not JSON (a proxy's error page): keep the status-based code.
  }
  return new RenderbusError(code, message, response.status, requestId, retryAfterMs);
}

function isConnectionRefused(error: unknown): boolean {
  const cause = (error as { cause?: { code?: string } })?.cause;
  return cause?.code === "ECONNREFUSED";
}

function describe(error: unknown): string {
  const cause = (error as { cause?: { code?: string; message?: string } })?.cause;
  return cause?.code ?? cause?.message ?? (error instanceof Error ? error.message : String(error));
}
