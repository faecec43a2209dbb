import type { ObjectStore } from "@renderbus/storage";
import type { Logger } from "@renderbus/telemetry";

/** How often a worker deletes outputs past their retention (each worker does; deleting twice is harmless). */
export const OUTPUT_PRUNE_INTERVAL_MS = 60 * 60 * 1000;

/**
 * Deletes stored outputs older than `retentionMs` now and every {@link OUTPUT_PRUNE_INTERVAL_MS}: outputs outlive
 * their download links by nothing. Failures are logged and tried again next time. Returns a stop function.
 */
export function startOutputPruning({ outputs, retentionMs, logger, intervalMs = OUTPUT_PRUNE_INTERVAL_MS }: { outputs: Pick<ObjectStore, "deleteStoredBefore">; retentionMs: number; logger: Logger; intervalMs?: number }): () => void {
  const prune = () => {
    outputs.deleteStoredBefore(Date.now() - retentionMs).then(
      (deleted) => deleted > 0 && logger.info({ deleted }, "expired outputs deleted"),
      (error: unknown) => logger.warn({ err: error }, "deleting expired outputs failed"),
    );
  };
  const timer = setInterval(prune, intervalMs);
  timer.unref();
  prune();
  return () => clearInterval(timer);
}
