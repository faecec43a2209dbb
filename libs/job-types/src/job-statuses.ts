/**
 * A job's statuses (docs/concepts.md, "Job lifecycle"), in lifecycle order: what the jobs service stores and the
 * gateway validates filters against and documents. One list, so the two cannot drift apart.
 */
export const JOB_STATUSES = ["waiting", "dispatched", "running", "completed", "failed", "cancelled"] as const;
export type JobStatus = (typeof JOB_STATUSES)[number];

/** The statuses a job never leaves. */
export const TERMINAL_JOB_STATUSES: readonly JobStatus[] = ["completed", "failed", "cancelled"];
