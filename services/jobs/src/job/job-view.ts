import type { Selectable } from "kysely";
import type { jobs } from "@renderbus/contracts";
import type { JobViewTable, WebhookDeliveryTable } from "../db/jobs-database.js";
import type { JobState, JobStatus } from "./job.js";

const orUndefined = <T>(value: T | null): T | undefined => (value === null ? undefined : value);

/** The job state stored in a `job_views` row. */
export function jobStateOfRow(row: Selectable<JobViewTable>): JobState {
  return {
    id: row.id,
    orgId: row.org_id,
    batchId: orUndefined(row.batch_id),
    type: row.type,
    status: row.status as JobStatus,
    inputs: row.inputs,
    params: row.params,
    metadata: row.metadata,
    plan: row.plan,
    limits: row.limits,
    submittedBy: row.submitted_by,
    result: orUndefined(row.result) as jobs.JobResult | undefined,
    cost: orUndefined(row.cost) as jobs.JobCost | undefined,
    error: orUndefined(row.error) as jobs.JobError | undefined,
    createdAt: row.created_at,
    dispatchedAt: orUndefined(row.dispatched_at),
    startedAt: orUndefined(row.started_at),
    completedAt: orUndefined(row.completed_at),
  };
}

/** The job object (docs/concepts.md, "Jobs"), as the gRPC API returns it. */
export function jobMessage(state: JobState, deliveries: Selectable<WebhookDeliveryTable>[] = []): jobs.Job {
  return {
    id: state.id,
    orgId: state.orgId,
    batchId: state.batchId,
    type: state.type,
    status: state.status,
    inputs: state.inputs,
    params: state.params,
    metadata: state.metadata,
    result: state.result,
    cost: state.cost,
    error: state.error,
    timing: {
      createdAt: state.createdAt,
      dispatchedAt: state.dispatchedAt,
      startedAt: state.startedAt,
      completedAt: state.completedAt,
    },
    webhookDeliveries: deliveries.map((delivery) => ({
      id: delivery.id,
      event: delivery.event,
      status: delivery.status,
      attempts: delivery.attempts,
      lastAttemptAt: orUndefined(delivery.last_attempt_at),
      nextAttemptAt: orUndefined(delivery.next_attempt_at),
      lastResponseStatus: orUndefined(delivery.last_response_status),
      lastError: orUndefined(delivery.last_error),
    })),
  };
}
