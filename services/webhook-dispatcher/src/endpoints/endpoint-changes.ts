import { startNotificationListener, type NotificationListener } from "@renderbus/db";
import type { Logger } from "@renderbus/telemetry";
import type { EndpointDirectory } from "./endpoint-directory.js";

/**
 * NOTIFY channel of committed endpoint changes, payload the org id: sent by the `endpoints_changed` trigger (migration
 * 2026-11-30-001), so every write path notifies, in the writing transaction (nothing is told before it commits).
 */
export const ENDPOINTS_CHANGED_CHANNEL = "dispatcher_endpoints_changed";

/**
 * Keeps this replica's endpoint directory in step with every replica's changes: a changed org is forgotten when its
 * change commits, wherever it was made, and everything is forgotten after the LISTEN connection was lost (what was
 * notified meanwhile never arrives). The directory's TTL is then only the bound for a notice lost some other way.
 */
export function followEndpointChanges(options: { databaseUrl: string; directory: EndpointDirectory; logger: Logger }): Promise<NotificationListener> {
  const { directory } = options;
  return startNotificationListener({
    connectionString: options.databaseUrl,
    channel: ENDPOINTS_CHANGED_CHANNEL,
    // Only the gap after a lost connection comes without a payload: a stray NOTIFY on the channel cannot empty the cache.
    onNotify: (orgId) => (orgId === undefined ? directory.forgetAll() : directory.forget(orgId)),
    logger: options.logger,
  });
}
