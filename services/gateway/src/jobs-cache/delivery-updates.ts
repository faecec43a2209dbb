import type { Bus } from "@renderbus/bus";
import type { TerminalJobCache } from "./terminal-job-cache.js";

/**
 * Keeps the cache of finished jobs in step with their delivery logs: a job is dropped when an update of one of its
 * deliveries arrives, and every job once this replica's NATS connection comes back (core subscriptions do not replay
 * what was published while it was down). The TTL stays the safety net. Returns what stops following.
 */
export function followDeliveryUpdates(bus: Pick<Bus, "listen" | "onReconnect">, finishedJobs: TerminalJobCache): () => void {
  const stopGroups = bus.listen<{ updates?: Array<{ jobId?: string }> }>("webhooks.events.deliveries.updated", (event) => {
    for (const update of event?.updates ?? []) finishedJobs.forget(update?.jobId);
  });
  // Lone updates, from dispatchers older than the groups (during a rolling upgrade).
  const stopLone = bus.listen<{ jobId?: string }>("webhooks.events.delivery.updated", (event) => finishedJobs.forget(event?.jobId));
  const stopReconnects = bus.onReconnect(() => finishedJobs.forgetAll());
  return () => {
    stopGroups();
    stopLone();
    stopReconnects();
  };
}
