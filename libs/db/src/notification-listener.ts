import pg from "pg";
import type { Logger } from "@renderbus/telemetry";
import { assertIdentifier } from "./database.js";

export interface NotificationListenerOptions {
  connectionString: string;
  /** The NOTIFY channel (a plain identifier). */
  channel: string;
  /**
   * Called on every notification with its payload, and once the channel is listened to again after a lost
   * connection, without one: what was notified while it was down never arrives, so the caller assumes anything may
   * have been (it looks for work, or drops what it cached).
   */
  onNotify: (payload?: string) => void;
  logger?: Logger;
  /** First delay before reconnecting; it doubles after each failure up to `maxRetryMs`. */
  retryMs?: number;
  maxRetryMs?: number;
}

export interface NotificationListener {
  /** True while the channel is listened to. */
  readonly listening: boolean;
  stop(): Promise<void>;
}

/**
 * LISTENs on a PostgreSQL channel on a dedicated connection, and listens again after that connection is lost (a
 * database restart, a failover, a terminated backend): a listener that only logged the loss left its owner on its
 * slow safety-net poll for good. Resolves once the first attempt to listen has settled, listening or not.
 */
export async function startNotificationListener({
  connectionString,
  channel,
  onNotify,
  logger,
  retryMs = 250,
  maxRetryMs = 5000,
}: NotificationListenerOptions): Promise<NotificationListener> {
  assertIdentifier(channel);
  let stopped = false;
  let current: pg.Client | undefined;
  let listening = false;
  let failures = 0;
  let retryTimer: NodeJS.Timeout | undefined;

  const scheduleRetry = () => {
    if (stopped || retryTimer) return;
    failures += 1;
    retryTimer = setTimeout(
      () => {
        retryTimer = undefined;
        void connect(true);
      },
      Math.min(retryMs * 2 ** (failures - 1), maxRetryMs),
    );
  };

  const connect = async (reconnecting: boolean): Promise<void> => {
    const client = new pg.Client({ connectionString });
    current = client;
    let lost = false;
    const onLost = (error?: unknown) => {
      if (lost) return;
      lost = true;
      if (current === client) listening = false;
      client.end().catch(() => undefined);
      if (stopped) return;
      logger?.warn({ err: error, channel }, "LISTEN connection lost; listening again");
      scheduleRetry();
    };
    client.on("notification", (message) => onNotify(message.payload ?? ""));
    client.on("error", onLost);
    client.on("end", () => onLost());
    try {
      await client.connect();
      await client.query(`listen ${channel}`);
    } catch (error) {
      onLost(error);
      return;
    }
    if (stopped || lost) return;
    listening = true;
    failures = 0;
    if (reconnecting) {
      logger?.info({ channel }, "listening again");
      onNotify();
    }
  };

  await connect(false);
  return {
    get listening() {
      return listening;
    },
    async stop() {
      stopped = true;
      clearTimeout(retryTimer);
      listening = false;
      await current?.end().catch(() => undefined);
    },
  };
}
