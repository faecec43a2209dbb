import type { Kysely } from "kysely";
import { STREAMS, type Bus, type ConsumerHandle } from "@renderbus/bus";
import type { authEvents } from "@renderbus/contracts";
import { isPlanName } from "@renderbus/plans";
import type { JobsDatabase } from "../db/jobs-database.js";
import type { Scheduler } from "../scheduler/scheduler.js";

/** Durable consumer of the auth service's org changes; replicas share it. */
export const ORG_PLANS_DURABLE = "jobs-org-plans";
export const ORG_UPDATED_SUBJECT = "auth.events.org.updated";

/**
 * Keeps each org's current plan (org_plans) from `auth.events.org.updated`, and runs a scheduling pass for the org:
 * an upgrade dispatches the jobs already waiting up to the new plan's concurrency at once (a customer upgrades to get
 * a queue moving), a downgrade holds back the next ones. Only the concurrency follows the plan: each job keeps the
 * run time and input size limits of the plan it was submitted on. Events arrive in any order after a redelivery, so
 * an older one never overwrites a newer plan; one that is not an org change is acked without effect.
 */
export async function startOrgPlanConsumer(bus: Bus, db: Kysely<JobsDatabase>, scheduler: Scheduler): Promise<ConsumerHandle> {
  return bus.consume<Partial<authEvents.OrgUpdated> | null>({
    stream: STREAMS.authEvents,
    durable: ORG_PLANS_DURABLE,
    filterSubjects: [ORG_UPDATED_SUBJECT],
    handler: async (message) => {
      const event = message.data;
      if (!event || typeof event.orgId !== "string" || !event.orgId || typeof event.plan !== "string" || !isPlanName(event.plan)) return;
      if (typeof event.occurredAt !== "number" || !Number.isSafeInteger(event.occurredAt)) return;
      await db
        .insertInto("org_plans")
        .values({ org_id: event.orgId, plan: event.plan, changed_at: event.occurredAt })
        .onConflict((conflict) =>
          conflict.column("org_id").doUpdateSet({ plan: event.plan!, changed_at: event.occurredAt! }).where("org_plans.changed_at", "<=", event.occurredAt!),
        )
        .execute();
      scheduler.requestPass(event.orgId, "plan-changed");
    },
  });
}
