import type { Kysely } from "kysely";
import { eventRowsOf, GroupCommit, outboxRowsOf } from "@renderbus/db";
import { currentTraceHeaders, withTraceHeaders } from "@renderbus/telemetry";
import type { JobsDatabase } from "../db/jobs-database.js";
import { evolve } from "./evolve.js";
import { jobOutboxMessages } from "./job-messages.js";
import { jobViewRowOf } from "./job-store.js";
import type { JobEvent, JobState } from "./job.js";

/** A new job to store: its first events (QueueJob's) and the submission time. */
export interface NewJob {
  events: JobEvent[];
  now: number;
  /**
   * The submitting request's trace (W3C headers), stored with the job's events and outbox rows. A group is written
   * in whichever request's context started it, so each job carries its own (default: the active context's).
   */
  traceHeaders?: Record<string, string>;
}

/**
 * Stores new jobs (their first events, projection rows and outbox messages) in ONE statement: data-modifying CTEs
 * commit or fail together like a transaction, so a submission costs one round trip to PostgreSQL instead of five
 * (BEGIN, three inserts, COMMIT), and jobs submitted at the same moment share it (see `JobCreator`). A brand-new
 * stream has no version to conflict with. For jobs outside any batch (a batch's jobs also update the batch
 * projection: `commitJobEvents`). Returns each job's state, in order.
 */
export async function createJobs(db: Kysely<JobsDatabase>, jobs: NewJob[]): Promise<JobState[]> {
  const states: JobState[] = [];
  const eventRows: unknown[] = [];
  const outboxRows: unknown[] = [];
  const viewRows: ReturnType<typeof jobViewRowOf>[] = [];
  for (const { events, now, traceHeaders = currentTraceHeaders() } of jobs) {
    withTraceHeaders(traceHeaders, () => {
      const { rows } = eventRowsOf(events[0]!.data.jobId, 0, events, now);
      const job = events.reduce<JobState | undefined>(evolve, undefined)!;
      const stored = rows.map((row, index) => ({ ...events[index]!, eventId: row.event_id }));
      eventRows.push(...rows);
      outboxRows.push(...outboxRowsOf(jobOutboxMessages(stored, job), now));
      viewRows.push(jobViewRowOf(job, rows.length));
      states.push(job);
    });
  }
  await db
    .with("new_events", (query) => query.insertInto("events").values(eventRows as never))
    .with("new_outbox", (query) => query.insertInto("outbox").values(outboxRows as never))
    .insertInto("job_views")
    .values(viewRows)
    .execute();
  return states;
}

/**
 * Group commit of new jobs: submissions that arrive while a statement is in flight go together in the next one, so
 * under load PostgreSQL commits (and flushes its WAL) once per group instead of once per job; an idle system writes
 * a job at once. When a group fails, each job is written again on its own, so one bad row fails only its request.
 */
export class JobCreator {
  private readonly writer: GroupCommit<NewJob, JobState>;

  constructor(db: Kysely<JobsDatabase>, maxGroup = 64) {
    this.writer = new GroupCommit((jobs) => createJobs(db, jobs), maxGroup);
  }

  create(job: NewJob): Promise<JobState> {
    return this.writer.submit({ traceHeaders: currentTraceHeaders(), ...job });
  }
}
