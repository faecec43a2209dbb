import type { jobEvents } from "@renderbus/contracts";

/** The batch aggregate's only event: a batch is a fixed set of jobs; its progress is projected from their events. */
export interface BatchCreatedEvent {
  type: "BatchCreated";
  data: jobEvents.BatchCreated;
}

/** Decides the creation of a batch (pure). */
export function decideCreateBatch(command: { batchId: string; orgId: string; jobIds: string[]; now: number }): BatchCreatedEvent[] {
  return [{ type: "BatchCreated", data: { batchId: command.batchId, orgId: command.orgId, jobIds: command.jobIds, createdAt: command.now } }];
}
