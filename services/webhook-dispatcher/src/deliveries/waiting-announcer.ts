import type { Kysely } from "kysely";
import type { Logger } from "@renderbus/telemetry";
import type { DispatcherTables } from "../database.js";
import { announceWaitingDeliveries } from "./announcements.js";

export interface WaitingAnnouncerOptions {
  db: Kysely<DispatcherTables>;
  logger: Logger;
  /** How long a new delivery may go unannounced: past it, its first attempt is not following at once. */
  afterMs: number;
  intervalMs: number;
}

/**
 * Periodically announces deliveries whose first attempt did not follow their creation (see
 * announceWaitingDeliveries). On a system that keeps up it finds nothing: an index on the unannounced rows only.
 */
export function startWaitingAnnouncer({ db, logger, afterMs, intervalMs }: WaitingAnnouncerOptions): { stop(): Promise<void> } {
  let running: Promise<unknown> = Promise.resolve();
  const timer = setInterval(() => {
    running = running.then(() =>
      announceWaitingDeliveries(db, { createdBefore: Date.now() - afterMs }).catch((error: unknown) =>
        logger.warn({ err: error }, "announcing waiting deliveries failed; retrying on the next tick"),
      ),
    );
  }, intervalMs);
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
