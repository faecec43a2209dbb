import type { Kysely } from "kysely";
import { STREAMS, type Bus, type ConsumerHandle } from "@renderbus/bus";
import type { webhooks } from "@renderbus/contracts";
import type { JobsDatabase } from "../db/jobs-database.js";
import { GroupCommit } from "@renderbus/db";
import { projectDeliveries } from "./project-delivery.js";

/** Durable consumer name; replicas share it. */
export const DELIVERIES_DURABLE = "jobs-deliveries";

/**
 * Projects the dispatcher's `webhooks.events.delivery.updated` onto job records (GetJob's webhookDeliveries). Every
 * delivery announces itself at least once, so this runs about once per webhook: the updates that arrive while one
 * group is written go together in the next (one statement and one commit per group instead of per update), and each
 * message is acked once its group committed.
 */
export function startDeliveryConsumer(bus: Bus, db: Kysely<JobsDatabase>): Promise<ConsumerHandle> {
  const writer = new GroupCommit<webhooks.DeliveryUpdated, void>(async (updates) => {
    await projectDeliveries(db, updates);
    return updates.map(() => undefined);
  });
  return bus.consume<webhooks.DeliveryUpdated>({
    stream: STREAMS.webhookEvents,
    durable: DELIVERIES_DURABLE,
    filterSubjects: ["webhooks.events.delivery.updated"],
    // Messages wait for their group here, not for a connection: a group is one statement however large.
    concurrency: 128,
    handler: (message) => writer.submit(message.data),
  });
}
