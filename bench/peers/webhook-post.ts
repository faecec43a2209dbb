import http from "node:http";
import { signatureOf, standardWebhookHeaders, webhookHeaderNames } from "@renderbus/webhook-signing";

/**
 * The HTTP side of a peer sender, made equal to the dispatcher's (services/webhook-dispatcher/src/sending/
 * post-webhook.ts): Node's core HTTP client through a keep-alive agent with the same socket cap (16 per origin), the
 * same headers (both signatures, HMAC-SHA256 each), the same attempt timeout (10 s). What differs between the senders
 * is then the queue around the POST, which is what the comparison is about.
 */
export const PEER_MAX_SOCKETS = 16;
export const PEER_TIMEOUT_MS = 10_000;

export interface PeerWebhook {
  url: string;
  deliveryId: string;
  event: string;
  body: string;
  attempt: number;
  secret: string;
}

export interface PeerAttempt {
  startedAt: number;
  latencyMs: number;
  status: number | null;
  error: string | null;
}

export function createPeerAgent(): http.Agent {
  return new http.Agent({ keepAlive: true, maxSockets: PEER_MAX_SOCKETS, timeout: 4000 });
}

/** One attempt; never throws (the caller records it and decides on a retry). */
export function postPeerWebhook(agent: http.Agent, webhook: PeerWebhook): Promise<PeerAttempt> {
  const startedAt = Date.now();
  const started = performance.now();
  const names = webhookHeaderNames("Renderbus");
  const body = Buffer.from(webhook.body, "utf8");
  const headers = {
    "content-type": "application/json",
    "user-agent": "Renderbus-Webhooks/peer",
    [names.event]: webhook.event,
    [names.delivery]: webhook.deliveryId,
    [names.attempt]: String(webhook.attempt),
    [names.signature]: signatureOf(webhook.body, webhook.secret),
    ...standardWebhookHeaders({ id: webhook.deliveryId, timestampSeconds: startedAt / 1000, body: webhook.body, secrets: [webhook.secret] }),
    "content-length": String(body.length),
  };
  const done = (status: number | null, error: string | null): PeerAttempt => ({ startedAt, latencyMs: Math.round(performance.now() - started), status, error });
  return new Promise((resolve) => {
    const request = http.request(webhook.url, { method: "POST", agent, headers, signal: AbortSignal.timeout(PEER_TIMEOUT_MS) });
    request.on("error", (error) => resolve(done(null, error.message)));
    request.on("response", (response) => {
      const status = response.statusCode ?? 0;
      response.resume();
      response.on("end", () => resolve(done(status, status >= 200 && status < 300 ? null : `HTTP ${status}`)));
      response.on("error", (error) => resolve(done(status, error.message)));
    });
    request.end(body);
  });
}
