import { createHmac, randomBytes } from "node:crypto";
import type { RenderbusClient } from "../client.js";
import { RenderbusError } from "../errors.js";
import type { StreamedWebhook } from "../types.js";
import { EXIT, ExitError } from "./exit-codes.js";
import type { Output } from "./output.js";

export interface ListenOptions {
  forwardTo: string;
  /** Local signing secret; the forwarded requests are signed with it exactly as the dispatcher signs. */
  secret: string;
  /** Only these events (all when empty). */
  events: string[];
  /** Header brand (`X-<brand>-Signature`). */
  brand: string;
  signal: AbortSignal;
}

const FORWARD_TIMEOUT_MS = 10_000;
const sleep = (ms: number, signal: AbortSignal) =>
  new Promise<void>((resolve) => {
    const timer = setTimeout(resolve, ms);
    signal.addEventListener("abort", () => { clearTimeout(timer); resolve(); }, { once: true });
  });

export const newListenSecret = (): string => `whsec_${randomBytes(24).toString("hex")}`;

/**
 * `renderbus webhooks listen`: follows the org's webhook event stream and POSTs each payload, byte for byte, to a
 * local URL with the delivery headers, signed with a local secret, like `stripe listen`. Reconnects with backoff
 * when the stream drops; stops on Ctrl-C (the signal) or an authentication error.
 */
export async function listenAndForward(client: RenderbusClient, output: Output, options: ListenOptions): Promise<void> {
  let backoffMs = 500;
  let announced = false;
  while (!options.signal.aborted) {
    try {
      for await (const item of client.webhooks.events(options.signal)) {
        backoffMs = 500;
        if (item.type === "ready") {
          if (!announced) announceReady(output, options);
          else if (!output.json) output.err("Reconnected.");
          announced = true;
          continue;
        }
        if (options.events.length > 0 && !options.events.includes(item.event)) continue;
        await forward(item, output, options);
      }
    } catch (error) {
      if (options.signal.aborted) break;
      if (error instanceof RenderbusError && (error.status === 401 || error.status === 403)) {
        throw new ExitError(error.status === 401 ? EXIT.AUTH : EXIT.API_ERROR, `${error.code}: ${error.message}`);
      }
      if (!output.json) output.err(`Event stream interrupted (${error instanceof Error ? error.message : String(error)}); reconnecting in ${backoffMs} ms`);
    }
    if (options.signal.aborted) break;
    await sleep(backoffMs, options.signal);
    backoffMs = Math.min(backoffMs * 2, 10_000);
  }
}

function announceReady(output: Output, options: ListenOptions): void {
  if (output.json) {
    output.out(JSON.stringify({ type: "ready", forwardTo: options.forwardTo, secret: options.secret }));
    return;
  }
  output.out(`Ready! Forwarding webhooks to ${options.forwardTo}`);
  output.out(`Your local webhook signing secret is ${options.secret} (verify with verifyWebhook; ^C to quit)`);
}

/** POSTs the exact bytes with the headers a real delivery carries; no redirects, 10 s timeout, like the dispatcher. */
async function forward(webhook: StreamedWebhook, output: Output, options: ListenOptions): Promise<void> {
  const brand = options.brand;
  const started = Date.now();
  let status: number | null = null;
  let error: string | null = null;
  try {
    const response = await fetch(options.forwardTo, {
      method: "POST",
      redirect: "manual",
      signal: AbortSignal.any([options.signal, AbortSignal.timeout(FORWARD_TIMEOUT_MS)]),
      headers: {
        "content-type": "application/json",
        "user-agent": `${brand}-Webhooks/cli`,
        [`x-${brand.toLowerCase()}-signature`]: `sha256=${createHmac("sha256", options.secret).update(webhook.body).digest("hex")}`,
        [`x-${brand.toLowerCase()}-event`]: webhook.event,
        [`x-${brand.toLowerCase()}-delivery`]: webhook.id,
        [`x-${brand.toLowerCase()}-attempt`]: "1",
      },
      body: webhook.body,
    });
    status = response.status;
    await response.body?.cancel();
  } catch (caught) {
    const cause = (caught as { cause?: { code?: string } }).cause;
    error = cause?.code ?? (caught instanceof Error ? caught.message : String(caught));
  }
  const ms = Date.now() - started;
  if (output.json) {
    output.out(JSON.stringify({ type: "forwarded", id: webhook.id, event: webhook.event, status, error, ms }));
    return;
  }
  const at = new Date().toISOString();
  output.out(`${at}  --> ${webhook.event} [${webhook.id}]`);
  output.out(`${at}  <-- [${status ?? `ERROR ${error}`}] POST ${options.forwardTo} (${ms} ms)`);
}
