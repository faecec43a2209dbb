import { createServer, type Server } from "node:http";
import { preciseNow } from "./stats.js";

/** One webhook request as the receiver saw it. */
export interface Received {
  receivedAt: number;
  event: string;
  attempt: number;
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
  /** Resolves once `predicate` holds for the received list, or rejects after `timeoutMs`. */
  waitUntil(predicate: (received: Received[]) => boolean, timeoutMs: number): Promise<void>;
  close(): Promise<void>;
}

export async function startWebhookReceiver(): Promise<WebhookReceiver> {
  let received: Received[] = [];
  const waiters = new Set<() => void>();
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
      received.push({
        receivedAt,
        event: String(request.headers["x-renderbus-event"] ?? body.event ?? ""),
        attempt: Number(request.headers["x-renderbus-attempt"] ?? 1),
        body,
      });
      for (const wake of waiters) wake();
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
    waitUntil(predicate, timeoutMs) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!predicate(received)) return;
          cleanup();
          resolve();
        };
        const timer = setTimeout(() => {
          cleanup();
          reject(new Error(`receiver: condition not met within ${timeoutMs} ms (${received.length} received)`));
        }, timeoutMs);
        const cleanup = () => {
          clearTimeout(timer);
          waiters.delete(check);
        };
        waiters.add(check);
        check();
      });
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
