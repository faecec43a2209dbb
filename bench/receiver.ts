import { createServer, type Server } from "node:http";
import { preciseNow } from "./stats.js";

/** One webhook request as the receiver saw it. */
export interface Received {
  receivedAt: number;
  event: string;
  attempt: number;
  /** The request's path and query: tells endpoints of one receiver apart. */
  path: string;
  /** `X-Renderbus-Sequence` of a FIFO endpoint's delivery. */
  sequence?: number;
  body: { event?: string; jobId?: string; batchId?: string; timing?: { startedAt?: number; completedAt?: number } };
}

/**
 * A local webhook receiver that answers 200 at once, so the dispatcher (not the receiver) is what is measured.
 * Keeps what it received so benchmarks can count deliveries and compute event-to-attempt lag.
 */
export interface WebhookReceiver {
  url: string;
  received: Received[];
  /** Drops what was received so far (between benchmarks). */
  reset(): void;
  /**
   * Resolves once `count` requests matching `match` have been received (counting those already in), or rejects
   * after `timeoutMs`. Each arrival is matched once: re-scanning the whole list per request, as this did before, made
   * a 5,000-event round cost the receiver's process (which shares the cores with the dispatcher) O(n^2) work.
   */
  waitFor(match: (request: Received) => boolean, count: number, timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  let received: Received[] = [];
  const waiters = new Set<(request: Received) => void>();
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const receivedAt = preciseNow();
      response.writeHead(200).end();
      let body: Received["body"] = {};
      try {
        body = JSON.parse(Buffer.concat(chunks).toString()) as Received["body"];
      } catch {
        // The baseline loop sends the same bytes; a non-JSON body still counts as a request.
      }
      const entry: Received = {
        receivedAt,
        event: String(request.headers["x-renderbus-event"] ?? body.event ?? ""),
        attempt: Number(request.headers["x-renderbus-attempt"] ?? 1),
        path: request.url ?? "",
        ...(request.headers["x-renderbus-sequence"] ? { sequence: Number(request.headers["x-renderbus-sequence"]) } : {}),
        body,
      };
      received.push(entry);
      for (const arrived of waiters) arrived(entry);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/hook`,
    get received() {
      return received;
    },
    reset() {
      received = [];
    },
    waitFor(match, count, timeoutMs) {
      return new Promise((resolve, reject) => {
        let remaining = count - received.filter(match).length;
        if (remaining <= 0) return resolve();
        const arrived = (request: Received) => {
          if (!match(request) || --remaining > 0) return;
          cleanup();
          resolve();
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`receiver: ${remaining} of ${count} expected requests missing after ${timeoutMs} ms (${received.length} received)`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(arrived);
        };
        waiters.add(arrived);
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
