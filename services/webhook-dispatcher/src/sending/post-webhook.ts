import { readFileSync } from "node:fs";
import http from "node:http";
import https from "node:https";
import { isIP, type Socket } from "node:net";
import { signatureOf, standardWebhookHeaders, webhookHeaderNames } from "@renderbus/webhook-signing";
import { BlockedAddressError, guardedLookup, isBlockedAddress, unguardedLookup } from "./address-guard.js";
import { HostConnections, type HostConnection } from "./host-connections.js";
import { retryAfterMsOf } from "./retry-schedule.js";

const VERSION = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;

/** Bytes of the response body kept with an attempt; no more than this is ever read from a receiver. */
export const RESPONSE_EXCERPT_BYTES = 4096;

/** Response headers kept with an attempt: at most this many, each value cut to RESPONSE_HEADER_VALUE_CHARS. */
export const RESPONSE_HEADERS_KEPT = 50;
const RESPONSE_HEADER_VALUE_CHARS = 1000;

/**
 * Largest response head (status line and headers) accepted from a receiver; a bigger one fails the attempt
 * (HPE_HEADER_OVERFLOW) instead of being buffered.
 */
export const RESPONSE_HEADER_MAX_BYTES = 16 * 1024;

/** Idle keep-alive connections to receivers are closed after this long. */
const KEEP_ALIVE_IDLE_MS = 4000;

/**
 * Connections this process opens to one receiver host (scheme, host and port) at once; further attempts wait for one,
 * and one that comes free goes to the org holding the fewest there (see HostConnections).
 */
export const CONNECTIONS_PER_HOST = 16;

export interface WebhookAgentOptions {
  /** Refuse private, loopback and link-local addresses (always on in production mode). */
  guardAddresses: boolean;
  /** The connect step alone (DNS, TCP, TLS) fails after this long; the whole attempt is bounded by its own timeout. */
  connectTimeoutMs: number;
}

/**
 * The connection pools every attempt goes through: Node's core HTTP client, not undici. undici 7's HTTP/1 parser
 * asserts (an uncatchable exception that ends the process) when a receiver closes its socket while a response body
 * is paused under backpressure (nodejs/undici#5360): one hostile receiver could take the dispatcher down. Core HTTP
 * ends such a response with an error event instead.
 */
export interface WebhookAgent {
  readonly guardAddresses: boolean;
  readonly connectTimeoutMs: number;
  readonly http: http.Agent;
  readonly https: https.Agent;
  /** Who may use one of a host's CONNECTIONS_PER_HOST connections next: the agents' own queues stay empty. */
  readonly connections: HostConnections;
  /** Closes every pooled connection. */
  close(): Promise<void>;
}

/**
 * With the guard on, each connection resolves its host through `guardedLookup` (every resolved IP is checked at
 * connect time) and IP-literal hosts, which skip DNS, are checked before connecting. Either way names resolve
 * without libuv's thread pool, within the lib's DNS timeout (libs/address-guard host-resolver.ts).
 */
export function createWebhookAgent({ guardAddresses, connectTimeoutMs }: WebhookAgentOptions): WebhookAgent {
  // `timeout` closes idle pooled sockets only: a request in progress is bounded by the attempt's own timeout.
  const options = { keepAlive: true, maxSockets: CONNECTIONS_PER_HOST, timeout: KEEP_ALIVE_IDLE_MS, lookup: (guardAddresses ? guardedLookup : unguardedLookup) as never };
  const httpAgent = new http.Agent(options);
  const httpsAgent = new https.Agent(options);
  return {
    guardAddresses,
    connectTimeoutMs,
    http: httpAgent,
    https: httpsAgent,
    connections: new HostConnections(CONNECTIONS_PER_HOST),
    close: async () => {
      httpAgent.destroy();
      httpsAgent.destroy();
    },
  };
}

export interface WebhookRequest {
  url: string;
  /** The exact body bytes; the signature covers them. */
  body: string;
  event: string;
  deliveryId: string;
  attempt: number;
  /** Without a secret the signature header is left out (the org never set one). */
  secret: string | undefined;
  /** Secrets still in their grace period after a rotation: they sign `webhook-signature` beside `secret`. */
  previousSecrets?: readonly string[];
  brand: string;
  /** The delivery's place in its FIFO endpoint's queue: sent as `X-<brand>-Sequence` (docs/webhooks.md, "Ordering"). */
  sequence?: number | null;
  /** Whose attempt this is (the org): a host's connections are shared fairly between tenants. */
  tenant?: string;
}

export interface AttemptResult {
  startedAt: number;
  latencyMs: number;
  succeeded: boolean;
  responseStatus: number | null;
  error: string | null;
  responseExcerpt: string | null;
  /** What was sent, without its signature headers (see requestHeadersForLog). */
  requestHeaders: Record<string, string> | null;
  /** The receiver's response headers, lower-case names, bounded (RESPONSE_HEADERS_KEPT); null without an answer. */
  responseHeaders: Record<string, string> | null;
  /** The delay a 429 or 503 asked for with `Retry-After`, in ms (see retryAfterMsOf). */
  retryAfterMs: number | null;
  /**
   * The IP address the attempt's connection reached, as its socket saw it; null without an answer. The address a
   * response came from: with ALLOW_PRIVATE_ADDRESSES it decides whether the response may be kept (see
   * keptResponse), never a second lookup of the name, which could answer otherwise (DNS rebinding).
   */
  remoteAddress: string | null;
}

/**
 * The headers of docs/webhooks.md, in the configured brand, and beside them the Standard Webhooks headers
 * (`webhook-id` = the delivery id, `webhook-timestamp` = `now` in unix seconds, signed again on every attempt).
 * `X-<brand>-Timestamp` carries the same second as `webhook-timestamp`.
 */
export function webhookHeaders(request: WebhookRequest, now = Date.now()): Record<string, string> {
  const names = webhookHeaderNames(request.brand);
  const standard = standardWebhookHeaders({ id: request.deliveryId, timestampSeconds: now / 1000, body: request.body, secrets: request.secret ? [request.secret, ...(request.previousSecrets ?? [])] : [] });
  return {
    "content-type": "application/json",
    "user-agent": `${request.brand}-Webhooks/${VERSION}`,
    [names.event]: request.event,
    [names.delivery]: request.deliveryId,
    [names.attempt]: String(request.attempt),
    [names.timestamp]: standard["webhook-timestamp"],
    ...(request.sequence != null ? { [`X-${request.brand}-Sequence`]: String(request.sequence) } : {}),
    ...(request.secret ? { [names.signature]: signatureOf(request.body, request.secret) } : {}),
    ...standard,
  };
}

/**
 * The request headers as the attempt log keeps them: every header but the signatures (`X-<brand>-Signature`,
 * `webhook-signature`), which are secrets' work a log reader must never be able to replay or brute-force.
 */
export function requestHeadersForLog(headers: Record<string, string>, brand: string): Record<string, string> {
  const signatures = new Set([webhookHeaderNames(brand).signature.toLowerCase(), "webhook-signature"]);
  return Object.fromEntries(Object.entries(headers).filter(([name]) => !signatures.has(name.toLowerCase())));
}

/**
 * Text a receiver chose (its body, header names and values, what an error quoted of it) as PostgreSQL can store it:
 * `text` and `jsonb` refuse U+0000, which any binary body holds (`ok\0`, an image, a gzip page). Stored as is, it
 * failed the attempt's record, and the delivery was sent again after every lease, as attempt 1, forever. NUL becomes
 * U+FFFD, as bytes that are not UTF-8 already do when the body is decoded (which leaves no lone surrogate behind;
 * header text is decoded as latin1, which has none either).
 */
function storableText(text: string): string {
  return text.includes("\u0000") ? text.replaceAll("\u0000", "\uFFFD") : text;
}

/** The response headers, names and values, as `storableText` makes them. */
function storableHeaders(headers: Record<string, string> | null): Record<string, string> | null {
  return headers === null ? null : Object.fromEntries(Object.entries(headers).map(([name, value]) => [storableText(name), storableText(value)]));
}

/** A receiver's response headers, bounded in count and size (its whole head is at most RESPONSE_HEADER_MAX_BYTES). */
function keptResponseHeaders(raw: readonly string[]): Record<string, string> {
  // A Map, not an object: a receiver's header may be called `constructor` or `__proto__`.
  const kept = new Map<string, string>();
  for (let index = 0; index + 1 < raw.length; index += 2) {
    const name = raw[index]!.toLowerCase();
    const value = raw[index + 1]!.slice(0, RESPONSE_HEADER_VALUE_CHARS);
    const previous = kept.get(name);
    if (previous === undefined && kept.size >= RESPONSE_HEADERS_KEPT) continue;
    kept.set(name, previous === undefined ? value : `${previous}, ${value}`.slice(0, RESPONSE_HEADER_VALUE_CHARS));
  }
  return Object.fromEntries(kept);
}

/** The ways an attempt can end without an answer, as the attempt's error says them. */
class AttemptError extends Error {
  constructor(
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export interface PostWebhookOptions {
  /** The attempt fails without a 2xx within this long of getting its connection. */
  timeoutMs: number;
  /**
   * How long the attempt may wait for one of the host's {@link CONNECTIONS_PER_HOST} connections before it fails
   * unsent; `timeoutMs` when omitted. The sender keeps this plus `timeoutMs` inside its lease.
   */
  connectionWaitMs?: number;
  /** Service shutdown: ends the attempt early; the caller then does not record it. */
  abort?: AbortSignal;
}

/**
 * POSTs one attempt. Success is a 2xx inside `timeoutMs`; redirects are not followed (a 3xx is a failure), and the
 * whole exchange, connect included, is cut at the timeout. The timeout starts when the request gets its connection:
 * an attempt queued behind other attempts to the same host (other orgs' receivers there may be slow) is not charged
 * for their time, nor failed as the receiver's timeout before it was sent. Its wait is bounded by
 * `connectionWaitMs`, after which it fails unsent, and its turn at a connection comes before other tenants' that hold
 * more of the host's connections (`webhook.tenant`, see HostConnections). Never throws, whatever the receiver does (resets, answers garbage,
 * huge headers, an endless body, nothing at all): errors become the attempt's `error`. At most
 * {@link RESPONSE_EXCERPT_BYTES} of the body are read; the connection is then destroyed, never drained.
 * `latencyMs` is counted from the connection too.
 */
export async function postWebhook(agent: WebhookAgent, webhook: WebhookRequest, { timeoutMs, connectionWaitMs = timeoutMs, abort }: PostWebhookOptions): Promise<AttemptResult> {
  const startedAt = Date.now();
  let sentAt = performance.now();
  const headers = webhookHeaders(webhook);
  const requestHeaders = requestHeadersForLog(headers, webhook.brand);
  const finish = (result: Omit<AttemptResult, "startedAt" | "latencyMs" | "requestHeaders">): AttemptResult => ({
    startedAt,
    latencyMs: Math.round(performance.now() - sentAt),
    requestHeaders,
    ...result,
    // What the receiver chose is stored: made storable here, the one way out (see storableText).
    error: result.error === null ? null : storableText(result.error),
    responseExcerpt: result.responseExcerpt === null ? null : storableText(result.responseExcerpt),
    responseHeaders: storableHeaders(result.responseHeaders),
  });
  let cutBy: "timeout" | "connection-wait" | undefined;
  const failed = (error: unknown, status: number | null) =>
    finish({ succeeded: false, responseStatus: status, error: describeError(error, cutBy, { timeoutMs, connectionWaitMs }), responseExcerpt: null, responseHeaders: null, retryAfterMs: null, remoteAddress: null });
  if (abort?.aborted) return failed(abort.reason, null);
  let target: URL;
  try {
    target = targetOf(webhook.url, agent.guardAddresses);
  } catch (error) {
    return failed(error, null);
  }
  // The wait for a connection: first for this tenant's turn at one of the host's connections, then for the agent to
  // hand it over. The timers and `abort` end the attempt themselves: an AbortSignal handed to core HTTP costs a
  // controller, a stream listener and a signal listener per attempt, which showed in the dispatcher's profile.
  const connection: HostConnection = agent.connections.acquire(`${target.protocol}//${target.host}`, webhook.tenant ?? "");
  let call: Exchange | undefined;
  let stoppedEarly: { reason: unknown } | undefined;
  const stop = (reason: unknown) => {
    if (call) return call.cancel(reason);
    stoppedEarly ??= { reason };
    connection.cancel(reason);
  };
  const cut = (by: "timeout" | "connection-wait", ms: number) =>
    setTimeout(() => {
      cutBy = by;
      stop(new DOMException(`${by} after ${ms} ms`, "TimeoutError"));
    }, ms);
  let timer = cut("connection-wait", connectionWaitMs);
  const onStop = () => stop(abort?.reason);
  abort?.addEventListener("abort", onStop, { once: true });
  let settled = false;
  let status: number | null = null;
  try {
    await connection.granted;
    // Cut or stopped while the grant was on its way: nothing is sent, the connection goes back unused.
    if (stoppedEarly) throw stoppedEarly.reason;
    call = exchange(agent, target, webhook, headers, () => {
      if (settled) return;
      clearTimeout(timer);
      sentAt = performance.now();
      timer = cut("timeout", timeoutMs);
    });
    const response = await call.response;
    status = response.status;
    const succeeded = status >= 200 && status < 300;
    return finish({
      succeeded,
      responseStatus: status,
      error: succeeded ? null : status >= 300 && status < 400 ? `redirect (${status}) not followed` : `HTTP ${status}`,
      responseExcerpt: response.excerpt,
      responseHeaders: response.headers,
      retryAfterMs: retryAfterMsOf(status, response.retryAfter),
      remoteAddress: response.remoteAddress,
    });
  } catch (error) {
    return failed(error, status);
  } finally {
    settled = true;
    clearTimeout(timer);
    abort?.removeEventListener("abort", onStop);
    connection.release();
  }
}

/** The attempt's URL, refused before any connection when it is not http(s) or names a blocked IP literal. */
function targetOf(url: string, guardAddresses: boolean): URL {
  let target: URL;
  try {
    target = new URL(url);
  } catch {
    throw new AttemptError("INVALID_URL", "the webhook URL is not a valid URL");
  }
  if (target.protocol !== "http:" && target.protocol !== "https:") throw new AttemptError("INVALID_URL", `unsupported protocol ${target.protocol}`);
  const host = target.hostname.replace(/^\[|\]$/g, "");
  if (guardAddresses && isIP(host) !== 0 && isBlockedAddress(host)) throw new BlockedAddressError(host);
  return target;
}

/** An exchange in progress: its outcome, and a way to end it early (the request is destroyed with `reason`). */
interface Exchange {
  response: Promise<{ status: number; excerpt: string | null; headers: Record<string, string>; retryAfter: string | undefined; remoteAddress: string | null }>;
  cancel(reason: unknown): void;
}

/**
 * One request over core HTTP: resolves with the status and the first bytes of the body once the body ended, its
 * excerpt is full, or it broke after the status arrived (the status counts, the excerpt is what came); rejects when
 * no status arrived. Every path destroys what it leaves unread; `cancel` destroys the request (and its socket).
 * `onConnection` is called once the agent hands the request a connection (a pooled one, or a new one connecting).
 */
function exchange(agent: WebhookAgent, target: URL, webhook: WebhookRequest, headers: Record<string, string>, onConnection: () => void): Exchange {
  let request: http.ClientRequest | undefined;
  let fail: (reason: unknown) => void = () => {};
  const response: Exchange["response"] = new Promise((resolve, reject) => {
    fail = reject;
    const body = Buffer.from(webhook.body, "utf8");
    const client = target.protocol === "https:" ? https : http;
    const sent = client.request(target, {
      method: "POST",
      agent: target.protocol === "https:" ? agent.https : agent.http,
      headers: { ...headers, "content-length": String(body.length) },
      maxHeaderSize: RESPONSE_HEADER_MAX_BYTES,
      insecureHTTPParser: false,
    });
    request = sent;
    let connectTimer: NodeJS.Timeout | undefined;
    sent.on("socket", (socket: Socket) => {
      onConnection();
      if (!socket.connecting) return;
      connectTimer = setTimeout(
        () => sent.destroy(new AttemptError("CONNECT_TIMEOUT", `connecting took over ${agent.connectTimeoutMs} ms`)),
        agent.connectTimeoutMs,
      );
      socket.once("connect", () => clearTimeout(connectTimer));
    });
    sent.on("close", () => clearTimeout(connectTimer));
    // Once the status has arrived, an error (the timeout or a cancel destroying the request mid-body, a reset) ends
    // the response with what came; the request's error event fires before the response's own.
    let answered: (() => void) | undefined;
    sent.on("error", (error) => (answered ? answered() : reject(error)));
    sent.on("response", (response) => {
      const status = response.statusCode ?? 0;
      // Read now, while the socket is open (a destroyed one forgets it): where this answer came from.
      const remoteAddress = response.socket?.remoteAddress ?? null;
      const chunks: Buffer[] = [];
      let size = 0;
      let settled = false;
      const settle = () => {
        if (settled) return;
        settled = true;
        const excerpt = Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString("utf8");
        // Whatever is left unread (the rest of a 1 GB body, a trickle) is not worth a byte more: drop the connection.
        if (!response.complete) response.destroy();
        const retryAfter = response.headers["retry-after"];
        resolve({ status, excerpt, headers: keptResponseHeaders(response.rawHeaders), retryAfter: typeof retryAfter === "string" ? retryAfter.slice(0, 100) : undefined, remoteAddress });
      };
      answered = settle;
      response.on("data", (chunk: Buffer) => {
        if (settled) return;
        chunks.push(chunk);
        size += chunk.length;
        if (size >= RESPONSE_EXCERPT_BYTES) settle();
      });
      response.on("end", settle);
      // A reset or the timeout in the middle of the body: the status arrived, the excerpt is what came.
      response.on("error", settle);
      response.on("close", settle);
    });
    sent.end(body);
  });
  return {
    response,
    cancel: (reason) => {
      const error = reason instanceof Error ? reason : new AttemptError("ABORTED", String(reason));
      const queued = request !== undefined && !request.socket;
      request?.destroy(error);
      // A request still queued for a connection emits nothing until the agent hands it one (which it then gives back
      // unused): the attempt ends now. One with a connection ends through its own events, as before.
      if (queued) fail(error);
    },
  };
}

function describeError(error: unknown, cutBy: "timeout" | "connection-wait" | undefined, limits: { timeoutMs: number; connectionWaitMs: number }): string {
  if (cutBy === "timeout") return `timed out after ${limits.timeoutMs} ms`;
  if (cutBy === "connection-wait") return `not sent: no connection to this host came free within ${limits.connectionWaitMs} ms (at most ${CONNECTIONS_PER_HOST} at once per dispatcher process)`;
  let current: unknown = error;
  // The guard's refusal may come wrapped (a lookup error); it is the useful message.
  for (let depth = 0; current && depth < 4; depth += 1) {
    if (current instanceof BlockedAddressError) return current.message;
    current = (current as { cause?: unknown }).cause;
  }
  const err = error as { code?: string; message?: string };
  if (err.code === "HPE_HEADER_OVERFLOW") return `${err.code}: the response headers exceed ${RESPONSE_HEADER_MAX_BYTES} bytes`;
  if (err.code?.startsWith("HPE_")) return `${err.code}: the receiver did not answer with valid HTTP (${err.message ?? "parse error"})`;
  return [err.code, err.message].filter(Boolean).join(": ") || "request failed";
}
