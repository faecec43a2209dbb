import { conflict, notFound } from "@renderbus/errors";
import type { jobs } from "@renderbus/contracts";
import { isTerminal, type JobCommand, type JobEvent, type JobState } from "./job.js";

/**
 * Decides which events a command produces for the job's current state. Pure: no I/O, no clock.
 * Worker reports are idempotent (a repeated report of the state the job is already in yields no events) and are
 * rejected with CONFLICT once the job is in another terminal state: that is how a worker learns of a cancellation.
 * @throws AppError NOT_FOUND for a job that does not exist, CONFLICT for a transition the state does not allow.
 */
export function decide(state: JobState | undefined, command: JobCommand): JobEvent[] {
  if (command.type === "QueueJob") {
    if (state) throw conflict(`Job ${command.jobId} already exists`);
    return [
      {
        type: "JobQueued",
        data: {
          jobId: command.jobId,
          orgId: command.orgId,
          batchId: command.batchId,
          type: command.jobType,
          inputs: command.inputs,
          params: command.params,
          metadata: command.metadata,
          plan: command.plan,
          limits: command.limits,
          createdAt: command.now,
          submittedBy: command.submittedBy,
        },
      },
    ];
  }
  if (!state) throw notFound("Job");

  switch (command.type) {
    case "DispatchJob":
      if (state.status !== "waiting") throw conflict(`Job is ${state.status}, not waiting`);
      return [{ type: "JobDispatched", data: { jobId: state.id, orgId: state.orgId, dispatchedAt: command.now } }];

    case "StartJob":
      if (state.status === "running") return [];
      if (state.status !== "dispatched") throw conflict(`Job is ${state.status} and cannot start`);
      return [
        {
          type: "JobStarted",
          data: {
            jobId: state.id,
            orgId: state.orgId,
            batchId: state.batchId,
            type: state.type,
            createdAt: state.createdAt,
            startedAt: command.now,
            workerId: command.workerId,
          },
        },
      ];

    case "CompleteJob":
      if (state.status === "completed") return [];
      // A worker that skipped its start report may still complete a dispatched job.
      if (state.status !== "running" && state.status !== "dispatched") throw conflict(`Job is ${state.status} and cannot complete`);
      return [
        {
          type: "JobCompleted",
          data: {
            jobId: state.id,
            orgId: state.orgId,
            batchId: state.batchId,
            result: command.result,
            cost: command.cost,
            timing: timingOf(state, command.now),
          },
        },
      ];

    case "FailJob":
      if (state.status === "failed") return [];
      if (isTerminal(state.status)) throw conflict(`Job is ${state.status} and cannot fail`);
      return [
        {
          type: "JobFailed",
          data: { jobId: state.id, orgId: state.orgId, batchId: state.batchId, error: command.error, timing: timingOf(state, command.now) },
        },
      ];

    case "CancelJob":
      if (isTerminal(state.status)) throw conflict(`Job is already ${state.status}`);
      return [
        {
          type: "JobCancelled",
          data: { jobId: state.id, orgId: state.orgId, batchId: state.batchId, fromStatus: state.status, cancelledAt: command.now },
        },
      ];
  }
}

function timingOf(state: JobState, completedAt: number): jobs.JobTiming {
  return {
    createdAt: state.createdAt,
    dispatchedAt: state.dispatchedAt,
    // Absent for a job that failed before it started (an input error, the watchdog): the webhook then says null, as
    // the job record does; it never claims a start that did not happen.
    startedAt: state.startedAt,
    completedAt,
  };
}
