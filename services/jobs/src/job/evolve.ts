import type { JobEvent, JobState } from "./job.js";

/** Applies one stored event to the job's state. Pure; unknown transitions are trusted (events are facts). */
export function evolve(state: JobState | undefined, event: JobEvent): JobState {
  if (event.type === "JobQueued") {
    const data = event.data;
    return {
      id: data.jobId,
      orgId: data.orgId,
      batchId: data.batchId,
      type: data.type,
      status: "waiting",
      inputs: data.inputs ?? {},
      params: data.params ?? {},
      metadata: data.metadata ?? {},
      plan: data.plan,
      limits: data.limits ?? { maxRunSeconds: 0, maxInputBytes: 0, concurrency: 1 },
      submittedBy: data.submittedBy,
      result: undefined,
      cost: undefined,
      error: undefined,
      createdAt: data.createdAt,
      dispatchedAt: undefined,
      startedAt: undefined,
      completedAt: undefined,
    };
  }
  if (!state) throw new Error(`${event.type} before JobQueued`);
  switch (event.type) {
    case "JobDispatched":
      return { ...state, status: "dispatched", dispatchedAt: event.data.dispatchedAt };
    case "JobStarted":
      return { ...state, status: "running", startedAt: event.data.startedAt };
    case "JobCompleted":
      return {
        ...state,
        status: "completed",
        result: event.data.result,
        cost: event.data.cost,
        startedAt: state.startedAt ?? event.data.timing?.startedAt,
        completedAt: event.data.timing?.completedAt,
      };
    case "JobFailed":
      return { ...state, status: "failed", error: event.data.error, completedAt: event.data.timing?.completedAt };
    case "JobCancelled":
      return { ...state, status: "cancelled", completedAt: event.data.cancelledAt };
  }
}

/** Folds a whole stream; undefined for a job that does not exist. */
export function foldJob(events: JobEvent[]): JobState | undefined {
  return events.reduce<JobState | undefined>(evolve, undefined);
}
