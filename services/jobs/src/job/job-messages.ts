import type { OutboxMessage, StoredEvent } from "@renderbus/db";
import type { jobEvents } from "@renderbus/contracts";
import type { JobEvent, JobEventType, JobState } from "./job.js";

/** The public event name of each stored event (`Rb-Event-Type`, and the subject suffix after `jobs.events.`). */
export const JOB_EVENT_NAMES: Record<JobEventType, string> = {
  JobQueued: "job.queued",
  JobDispatched: "job.dispatched",
  // The product calls a started job "running" (docs/concepts.md, "Lifecycle"; webhook `job.running`).
  JobStarted: "job.running",
  JobCompleted: "job.completed",
  JobFailed: "job.failed",
  JobCancelled: "job.cancelled",
};

/**
 * Subject of a job's work message: workers consume `jobs.dispatch.>` (or `jobs.dispatch.<type>.>` for a subset of
 * types). The job id as the last token lets the jobs service ask the stream whether a job's dispatch is still there
 * (src/watchdog/resend-lost-dispatches.ts).
 */
export const dispatchSubject = (jobType: string, jobId: string): string => `jobs.dispatch.${jobType}.${jobId}`;

/** The work message of a dispatched job. `messageId` is its dispatch event's id (or a resend's id derived from it). */
export function dispatchWorkMessage(state: JobState, messageId: string, headers: Record<string, string> = {}): OutboxMessage {
  const work: jobEvents.JobDispatch = {
    jobId: state.id,
    orgId: state.orgId,
    type: state.type,
    inputs: state.inputs,
    params: state.params,
    limits: state.limits,
    createdAt: state.createdAt,
  };
  return {
    messageId,
    subject: dispatchSubject(state.type, state.id),
    body: work,
    headers: { "Rb-Event-Type": JOB_EVENT_NAMES.JobDispatched, "Rb-Org-Id": state.orgId, ...headers, "Rb-Job-Type": state.type },
  };
}

/**
 * Outbox messages announcing stored job events: one on `jobs.events.<name>` per event (msg id = event id), plus the
 * work message on `jobs.dispatch.<type>` for a dispatch. `state` is the job after the events.
 */
export function jobOutboxMessages(stored: Array<Pick<StoredEvent, "eventId" | "type" | "data">>, state: JobState): OutboxMessage[] {
  const messages: OutboxMessage[] = [];
  for (const event of stored) {
    const name = JOB_EVENT_NAMES[event.type as JobEventType];
    const headers = { "Rb-Event-Type": name, "Rb-Org-Id": state.orgId };
    messages.push({ messageId: event.eventId, subject: `jobs.events.${name}`, body: event.data, headers });
    if (event.type === "JobDispatched") messages.push(dispatchWorkMessage(state, event.eventId));
  }
  return messages;
}

export const asJobEvents = (stored: StoredEvent[]): JobEvent[] => stored.map((event) => ({ type: event.type, data: event.data }) as JobEvent);
