import { Bus, STREAMS, type ConsumerHandle } from "@renderbus/bus";
import { jobEvents } from "@renderbus/contracts";
import type { Logger } from "@renderbus/telemetry";
import type { AuthResources } from "../auth-resources.js";
import { settleJob } from "./credit-ledger.js";

/** Durable consumer name: auth replicas share it, so each job event is settled by one of them. */
export const BILLING_CONSUMER = "auth-billing";

/** The terminal events only: a service that took `jobs.events.job.>` spent more CPU acking the rest than settling. */
export const JOB_CHARGE_SUBJECTS = ["jobs.events.job.completed", "jobs.events.job.failed", "jobs.events.job.cancelled"];

/**
 * Settles credits when jobs end: completion captures the job's actual `cost.credits` (the price of the output
 * produced, which the job's reservation covers), failure and cancellation release the reservation. Settling is
 * idempotent per job, so redeliveries are harmless.
 */
export async function startJobChargesConsumer(bus: Bus, store: AuthResources, logger?: Logger): Promise<ConsumerHandle> {
  return bus.consume<unknown>({
    stream: STREAMS.jobEvents,
    durable: BILLING_CONSUMER,
    filterSubjects: JOB_CHARGE_SUBJECTS,
    // Until 2026-11 one durable of this name took `jobs.events.job.>`; the per-subject ones continue where it stopped.
    replaces: [BILLING_CONSUMER],
    concurrency: 4,
    retryDelayMs: 2000,
    handler: async (message) => {
      if (message.subject.endsWith(".job.completed")) {
        const event = jobEvents.JobCompleted.fromJSON(message.data);
        const credits = Math.max(0, Math.round(event.cost?.credits ?? 0));
        const settled = await settleJob(store.db, event.orgId, event.jobId, { outcome: "completed", credits, description: event.cost?.breakdown || undefined });
        if (settled.shortfall > 0) {
          // The worker reports only costs its reservation covers; a cost above it is a bug to find, not a charge to skip.
          logger?.error(
            { jobId: event.jobId, orgId: event.orgId, credits, shortfall: settled.shortfall, uncollected: settled.uncollected },
            "job cost exceeded its reservation: the reservation must cover the produced output",
          );
        }
        logger?.debug({ jobId: event.jobId, orgId: event.orgId, credits, captured: settled.captured }, "job charged");
      } else if (message.subject.endsWith(".job.failed")) {
        const event = jobEvents.JobFailed.fromJSON(message.data);
        await settleJob(store.db, event.orgId, event.jobId, { outcome: "released", reason: "failed" });
      } else if (message.subject.endsWith(".job.cancelled")) {
        const event = jobEvents.JobCancelled.fromJSON(message.data);
        await settleJob(store.db, event.orgId, event.jobId, { outcome: "released", reason: "cancelled" });
      }
    },
  });
}
