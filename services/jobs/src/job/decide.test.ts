import { describe, expect, it } from "vitest";
import { AppError } from "@renderbus/errors";
import { decide } from "./decide.js";
import { evolve, foldJob } from "./evolve.js";
import type { JobCommand, JobEvent, JobState } from "./job.js";

const queue: JobCommand = {
  type: "QueueJob",
  jobId: "job_1",
  orgId: "org_1",
  batchId: "batch_1",
  jobType: "thumbnail",
  inputs: { source: "https://example.com/a.mp4" },
  params: { timestamp: 1 },
  metadata: { ref: "x" },
  plan: "free",
  limits: { maxRunSeconds: 120, maxInputBytes: 100, concurrency: 2 },
  submittedBy: "usr_1",
  now: 1000,
};

/** Runs commands in order from nothing, returning the state and every event. */
function run(...commands: JobCommand[]): { state: JobState | undefined; events: JobEvent[] } {
  let state: JobState | undefined;
  const events: JobEvent[] = [];
  for (const command of commands) {
    const decided = decide(state, command);
    events.push(...decided);
    state = decided.reduce(evolve, state);
  }
  return { state, events };
}

const codeOf = (fn: () => unknown) => {
  try {
    fn();
  } catch (error) {
    return error instanceof AppError ? error.code : "not an AppError";
  }
  return "no error";
};

describe("job aggregate", () => {
  it("queues a new job as waiting with the limits and timing of the submission", () => {
    const { state, events } = run(queue);
    expect(events.map((event) => event.type)).toEqual(["JobQueued"]);
    expect(state).toMatchObject({ id: "job_1", status: "waiting", batchId: "batch_1", createdAt: 1000, limits: { concurrency: 2 } });
  });

  it("walks waiting -> dispatched -> running -> completed with the timing of each step", () => {
    const { state, events } = run(
      queue,
      { type: "DispatchJob", now: 1100 },
      { type: "StartJob", workerId: "w1", now: 1200 },
      { type: "CompleteJob", result: { url: "u", metadata: {}, outputKey: "k", contentType: "image/jpeg" }, cost: { credits: 1, breakdown: "image" }, now: 1300 },
    );
    expect(events.map((event) => event.type)).toEqual(["JobQueued", "JobDispatched", "JobStarted", "JobCompleted"]);
    expect(state).toMatchObject({ status: "completed", dispatchedAt: 1100, startedAt: 1200, completedAt: 1300, cost: { credits: 1 } });
    const completed = events[3]!;
    expect(completed.type === "JobCompleted" && completed.data.timing).toEqual({ createdAt: 1000, dispatchedAt: 1100, startedAt: 1200, completedAt: 1300 });
  });

  it("records a failure with its code and no cost", () => {
    const { state } = run(queue, { type: "DispatchJob", now: 2 }, { type: "FailJob", error: { code: "PROVIDER_ERROR", message: "boom" }, now: 3 });
    expect(state).toMatchObject({ status: "failed", error: { code: "PROVIDER_ERROR" }, cost: undefined, completedAt: 3 });
  });

  it("says a job that failed before it started never started, in its event as on its record", () => {
    const { state, events } = run(queue, { type: "DispatchJob", now: 2 }, { type: "FailJob", error: { code: "INPUT_ERROR", message: "unreachable" }, now: 3 });
    const failed = events.at(-1)!;
    expect(failed.type === "JobFailed" && failed.data.timing).toEqual({ createdAt: 1000, dispatchedAt: 2, startedAt: undefined, completedAt: 3 });
    expect(state?.startedAt).toBeUndefined();
    const afterStart = run(queue, { type: "DispatchJob", now: 2 }, { type: "StartJob", workerId: "w", now: 3 }, { type: "FailJob", error: { code: "PROVIDER_ERROR", message: "boom" }, now: 4 }).events.at(-1)!;
    expect(afterStart.type === "JobFailed" && afterStart.data.timing?.startedAt).toBe(3);
  });

  it.each([
    ["waiting", [] as JobCommand[]],
    ["dispatched", [{ type: "DispatchJob", now: 2 }] as JobCommand[]],
    ["running", [{ type: "DispatchJob", now: 2 }, { type: "StartJob", workerId: "w", now: 3 }] as JobCommand[]],
  ])("cancels a %s job and remembers where it was cancelled from", (from, steps) => {
    const { state, events } = run(queue, ...steps, { type: "CancelJob", now: 9 });
    expect(state?.status).toBe("cancelled");
    const cancelled = events.at(-1)!;
    expect(cancelled.type === "JobCancelled" && cancelled.data.fromStatus).toBe(from);
  });

  it("returns 409 CONFLICT when cancelling a completed, failed or cancelled job", () => {
    const done = run(queue, { type: "DispatchJob", now: 2 }, { type: "CompleteJob", result: { url: "", metadata: {}, outputKey: "", contentType: "" }, cost: { credits: 1, breakdown: "" }, now: 3 }).state;
    const failed = run(queue, { type: "FailJob", error: { code: "INPUT_ERROR", message: "x" }, now: 3 }).state;
    const cancelled = run(queue, { type: "CancelJob", now: 3 }).state;
    for (const state of [done, failed, cancelled]) expect(codeOf(() => decide(state, { type: "CancelJob", now: 4 }))).toBe("CONFLICT");
  });

  it("treats repeated worker reports as no-ops and rejects reports on a cancelled job", () => {
    const running = run(queue, { type: "DispatchJob", now: 2 }, { type: "StartJob", workerId: "w", now: 3 }).state;
    expect(decide(running, { type: "StartJob", workerId: "w", now: 4 })).toEqual([]);
    const failed = run(queue, { type: "FailJob", error: { code: "PROVIDER_ERROR", message: "x" }, now: 3 }).state;
    expect(decide(failed, { type: "FailJob", error: { code: "PROVIDER_ERROR", message: "x" }, now: 4 })).toEqual([]);
    const cancelled = run(queue, { type: "DispatchJob", now: 2 }, { type: "CancelJob", now: 3 }).state;
    expect(codeOf(() => decide(cancelled, { type: "StartJob", workerId: "w", now: 4 }))).toBe("CONFLICT");
    expect(codeOf(() => decide(cancelled, { type: "CompleteJob", result: { url: "", metadata: {}, outputKey: "", contentType: "" }, cost: { credits: 1, breakdown: "" }, now: 4 }))).toBe("CONFLICT");
  });

  it("refuses to dispatch a job that is not waiting, and to start one that was never dispatched", () => {
    const waiting = run(queue).state;
    expect(codeOf(() => decide(waiting, { type: "StartJob", workerId: "w", now: 2 }))).toBe("CONFLICT");
    const dispatched = run(queue, { type: "DispatchJob", now: 2 }).state;
    expect(codeOf(() => decide(dispatched, { type: "DispatchJob", now: 3 }))).toBe("CONFLICT");
  });

  it("answers NOT_FOUND for commands on a job that does not exist, and CONFLICT for queueing one twice", () => {
    expect(codeOf(() => decide(undefined, { type: "CancelJob", now: 1 }))).toBe("NOT_FOUND");
    expect(codeOf(() => decide(run(queue).state, queue))).toBe("CONFLICT");
  });

  it("folds a stored stream back to the same state", () => {
    const { state, events } = run(queue, { type: "DispatchJob", now: 2 }, { type: "StartJob", workerId: "w", now: 3 });
    expect(foldJob(events)).toEqual(state);
  });
});
