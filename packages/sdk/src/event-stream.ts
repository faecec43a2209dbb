import { createParser, type EventSourceMessage } from "eventsource-parser";
import type { Transport } from "./transport.js";
import { toError } from "./transport.js";

export interface ServerSentEvent {
  event: string;
  data: string;
  id: string | undefined;
}

/**
 * Opens a Server-Sent Events stream of the API and yields its events until the server ends it or `signal` aborts.
 * An error response throws RenderbusError; reconnecting is the caller's decision (waitForJob and `webhooks listen`
 * do it with backoff).
 */
export async function* readEventStream(transport: Transport, path: string, signal?: AbortSignal): AsyncGenerator<ServerSentEvent> {
  const response = await transport.fetchImpl(transport.url(path), {
    headers: transport.headers({ accept: "text/event-stream" }),
    ...(signal ? { signal } : {}),
  });
  if (!response.ok) throw await toError(response);
  if (!response.body) return;
  const queue: ServerSentEvent[] = [];
  const parser = createParser({
    onEvent: (message: EventSourceMessage) => queue.push({ event: message.event ?? "message", data: message.data, id: message.id }),
  });
  const decoder = new TextDecoder();
  const reader = response.body.getReader();
  try {
    for (;;) {
      const { value, done } = await reader.read();
      if (done) break;
      parser.feed(decoder.decode(value, { stream: true }));
      while (queue.length > 0) yield queue.shift()!;
    }
  } finally {
    // Releases the connection when the consumer stops early (break, return, throw).
    await reader.cancel().catch(() => undefined);
  }
}
