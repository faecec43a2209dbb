import type { Kysely } from "kysely";
import { STREAMS, type Bus, type ConsumerHandle } from "@renderbus/bus";
import type { webhooks } from "@renderbus/contracts";
import type { JobsDatabase } from "../db/jobs-database.js";
import { projectDelivery } from "./project-delivery.js";

/** Durable consumer name; replicas share it. */
export const DELIVERIES_DURABLE = "jobs-deliveries";

/** Projects the dispatcher's `webhooks.events.delivery.updated` onto job records (GetJob's webhookDeliveries). */
export function startDeliveryConsumer(bus: Bus, db: Kysely<JobsDatabase>): Promise<ConsumerHandle> {
  return bus.consume<webhooks.DeliveryUpdated>({
    stream: STREAMS.webhookEvents,
    durable: DELIVERIES_DURABLE,
    filterSubjects: ["webhooks.events.delivery.updated"],
    concurrency: 4,
    handler: async (message) => {
      await projectDelivery(db, message.data);
    },
  });
}
