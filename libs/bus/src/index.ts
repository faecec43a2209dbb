export * from "./bus.js";
export * from "./streams.js";
export * from "./nats-credentials.js";
export * from "./nats-permissions.js";
export { JOB_PROGRESS_SUBJECTS, jobProgressSubject, type JobProgressMessage, type JobProgressTiming } from "./job-progress.js";
export * from "./jetstream-start-up.js";
