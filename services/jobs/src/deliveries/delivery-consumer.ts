import type { Kysely } from "kysely";
import { STREAMS, type Bus, type ConsumerHandle } from "@renderbus/bus";
import type { webhooks } from "@renderbus/contracts";
import { linkActiveSpanTo } from "@renderbus/telemetry";
import type { JobsDatabase } from "../db/jobs-database.js";
import { GroupCommit } from "@renderbus/db";
import { projectDeliveries } from "./project-delivery.js";

/** Durable consumer of the dispatcher's DeliveriesUpdated batches; replicas share it. */
export const DELIVERY_BATCHES_DURABLE = "jobs-delivery-batches";
/**
 * Durable consumer of the per-delivery subject dispatchers published before the batches (kept, with its name, filter
 * and position, so the messages still in the stream during a rolling upgrade are projected too).
 */
export const DELIVERIES_DURABLE = "jobs-deliveries";

export const DELIVERIES_UPDATED_SUBJECT = "webhooks.events.deliveries.updated";
export const DELIVERY_UPDATED_SUBJECT = "webhooks.events.delivery.updated";

/**
 * Projects the dispatcher's delivery announcements onto job records (GetJob's webhookDeliveries): a
 * `webhooks.events.deliveries.updated` message carries the deliveries of one group of attempts, and the messages
 * that arrive while one group is written go together in the next (one statement and one commit for all their
 * updates); each message is acked once its group committed. Each batch's consume span links to the traces of its
 * updates (it belongs to none of them).
 *
 * Two durables, not one with both filter subjects: `Bus.consume` would name a durable per subject, so the existing
 * `jobs-deliveries` would be replaced, and the new ones would start after the last message it had acked, skipping
 * batches published before it by dispatchers upgraded first. Here the per-delivery durable keeps its position, and
 * the batch durable starts at the first batch in the stream (projection is idempotent, so replays cost time only).
 */
export async function startDeliveryConsumer(bus: Bus, db: Kysely<JobsDatabase>): Promise<ConsumerHandle> {
  const writer = new GroupCommit<webhooks.DeliveryUpdated[], void>(async (batches) => {
    await projectDeliveries(db, batches.flat());
    return batches.map(() => undefined);
  });
  const batches = await bus.consume<webhooks.DeliveriesUpdated>({
    stream: STREAMS.webhookEvents,
    durable: DELIVERY_BATCHES_DURABLE,
    filterSubjects: [DELIVERIES_UPDATED_SUBJECT],
    // Messages wait for their group here, not for a connection: a group is one statement however large.
    concurrency: 128,
    handler: (message) => {
      // A body without a list of updates, or with entries that are not objects (not what the dispatcher writes), is
      // acked without them rather than retried forever.
      const listed: unknown = (message.data as Partial<webhooks.DeliveriesUpdated> | null)?.updates;
      const updates = (Array.isArray(listed) ? listed : []).filter((update): update is webhooks.DeliveryUpdated => typeof update === "object" && update !== null);
      linkActiveSpanTo(updates.map((update) => update.trace));
      return writer.submit(updates);
    },
  });
  const singles = await bus.consume<webhooks.DeliveryUpdated>({
    stream: STREAMS.webhookEvents,
    durable: DELIVERIES_DURABLE,
    filterSubjects: [DELIVERY_UPDATED_SUBJECT],
    concurrency: 128,
    handler: (message) => writer.submit([message.data]),
  });
  return { stop: async () => void (await Promise.all([batches.stop(), singles.stop()])) };
}
