import type { Kysely } from "kysely";
import type { Plan, PlanName } from "@renderbus/plans";
import type { Logger } from "@renderbus/telemetry";
import type { AuthTables } from "../database.js";
import { releaseConfirmedHolds } from "./held-credits.js";
import { renewDueCredits } from "./monthly-credits.js";

/**
 * Runs renewDueCredits, then releaseConfirmedHolds, every `intervalMs` (and once at start) until stopped; a run still
 * going skips the next tick.
 */
export function startCreditRenewals({ db, plans, intervalMs, logger }: { db: Kysely<AuthTables>; plans: Record<PlanName, Plan>; intervalMs: number; logger: Logger }): { stop(): Promise<void> } {
  let running: Promise<void> | undefined;
  const run = () => {
    if (running) return;
    running = renewDueCredits(db, plans)
      .then(async (renewed) => {
        if (renewed > 0) logger.info({ renewed }, "monthly credits renewed");
        const released = await releaseConfirmedHolds(db, plans);
        if (released > 0) logger.info({ released }, "held credits released (addresses confirmed)");
      })
      .then(
        () => undefined,
        (error: unknown) => logger.warn({ err: error }, "renewing monthly credits failed; next run retries"),
      )
      .finally(() => {
        running = undefined;
      });
  };
  run();
  const timer = setInterval(run, intervalMs);
  timer.unref();
  return {
    async stop() {
      clearInterval(timer);
      await running;
    },
  };
}
