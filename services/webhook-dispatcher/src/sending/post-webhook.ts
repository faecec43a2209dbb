import { readFileSync } from "node:fs";
import { isIP } from "node:net";
import { Agent, buildConnector, request } from "undici";
import { signatureOf, webhookHeaderNames } from "@renderbus/webhook-signing";
import { BlockedAddressError, guardedLookup, isBlockedAddress } from "./address-guard.js";

const VERSION = (JSON.parse(readFileSync(new URL("../../package.json", import.meta.url), "utf8")) as { version: string }).version;

/** Bytes of the response body kept with an attempt. */
export const RESPONSE_EXCERPT_BYTES = 1024;

export interface WebhookAgentOptions {
  /** Refuse private, loopback and link-local addresses (always on in production mode). */
  guardAddresses: boolean;
  connectTimeoutMs: number;
}

/**
 * The undici agent every attempt goes through. With the guard on, each connection resolves its host through
 * `guardedLookup` (every resolved IP is checked at connect time) and IP-literal hosts, which skip DNS, are checked
 * before connecting.
 */
export function createWebhookAgent({ guardAddresses, connectTimeoutMs }: WebhookAgentOptions): Agent {
  const connector = buildConnector({ timeout: connectTimeoutMs, ...(guardAddresses ? { lookup: guardedLookup as never } : {}) });
  const connect: buildConnector.connector = (options, callback) => {
    const host = options.hostname.replace(/^\[|\]$/g, "");
    if (guardAddresses && isIP(host) !== 0 && isBlockedAddress(host)) {
      callback(new BlockedAddressError(host), null);
      return;
    }
    connector(options, callback);
  };
  return new Agent({ connect, keepAliveTimeout: 4000, connections: 16 });
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
  brand: string;
}

export interface AttemptResult {
  startedAt: number;
  latencyMs: number;
  succeeded: boolean;
  responseStatus: number | null;
  error: string | null;
  responseExcerpt: string | null;
}

/** The headers of SPEC section 7, in the configured brand. */
export function webhookHeaders(request: WebhookRequest): Record<string, string> {
  const names = webhookHeaderNames(request.brand);
  return {
    "content-type": "application/json",
    "user-agent": `${request.brand}-Webhooks/${VERSION}`,
    [names.event]: request.event,
    [names.delivery]: request.deliveryId,
    [names.attempt]: String(request.attempt),
    ...(request.secret ? { [names.signature]: signatureOf(request.body, request.secret) } : {}),
  };
}

/**
 * POSTs one attempt. Success is a 2xx inside `timeoutMs`; redirects are not followed (a 3xx is a failure), and the
 * whole exchange, connect included, is cut at the timeout. Never throws: errors become the attempt's `error`.
 * `abort` (service shutdown) ends the attempt early; the caller then does not record it.
 */
export async function postWebhook(
  agent: Agent,
  webhook: WebhookRequest,
  { timeoutMs, abort }: { timeoutMs: number; abort?: AbortSignal },
): Promise<AttemptResult> {
  const startedAt = Date.now();
  const started = performance.now();
  const timeout = AbortSignal.timeout(timeoutMs);
  const signal = abort ? AbortSignal.any([timeout, abort]) : timeout;
  const finish = (result: Omit<AttemptResult, "startedAt" | "latencyMs">): AttemptResult => ({
    startedAt,
    latencyMs: Math.round(performance.now() - started),
    ...result,
  });
  let status: number | null = null;
  try {
    const response = await request(webhook.url, {
      method: "POST",
      body: webhook.body,
      headers: webhookHeaders(webhook),
      dispatcher: agent,
      signal,
      headersTimeout: timeoutMs,
      bodyTimeout: timeoutMs,
    });
    status = response.statusCode;
    const succeeded = status >= 200 && status < 300;
    const excerpt = await readExcerpt(response.body).catch(() => null);
    return finish({
      succeeded,
      responseStatus: status,
      error: succeeded ? null : status >= 300 && status < 400 ? `redirect (${status}) not followed` : `HTTP ${status}`,
      responseExcerpt: excerpt,
    });
  } catch (error) {
    return finish({ succeeded: false, responseStatus: status, error: describeError(error, timeout.aborted, timeoutMs), responseExcerpt: null });
  }
}

async function readExcerpt(body: AsyncIterable<Buffer> & { destroy(): unknown }): Promise<string> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of body) {
    chunks.push(chunk);
    size += chunk.length;
    if (size >= RESPONSE_EXCERPT_BYTES) {
      // A large body is not worth downloading: drop the connection instead.
      body.destroy();
      break;
    }
  }
  return Buffer.concat(chunks).subarray(0, RESPONSE_EXCERPT_BYTES).toString("utf8");
}

function describeError(error: unknown, timedOut: boolean, timeoutMs: number): string {
  if (timedOut) return `timed out after ${timeoutMs} ms`;
  let current: unknown = error;
  // undici wraps connect errors; the guard's refusal is the useful message.
  for (let depth = 0; current && depth < 4; depth += 1) {
    if (current instanceof BlockedAddressError) return current.message;
    current = (current as { cause?: unknown }).cause;
  }
  const err = error as { code?: string; message?: string };
  return [err.code, err.message].filter(Boolean).join(": ") || "request failed";
}
