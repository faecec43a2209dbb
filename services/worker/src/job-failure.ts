import type { JobFailureCode } from "@renderbus/errors";

/**
 * Why a job failed, as reported to the jobs service with FailJob. The message is shown to the customer: short,
 * useful, and free of internal paths or raw provider output.
 */
export class JobFailure extends Error {
  override readonly name = "JobFailure";
  constructor(
    readonly code: JobFailureCode,
    message: string,
  ) {
    super(message);
  }
}

/** Thrown when the job was cancelled while the worker held it: nothing is reported, the message is acked. */
export class JobCancelledError extends Error {
  override readonly name = "JobCancelledError";
  constructor() {
    super("job was cancelled");
  }
}

export const inputError = (message: string): JobFailure => new JobFailure("INPUT_ERROR", message);
export const providerError = (message: string): JobFailure => new JobFailure("PROVIDER_ERROR", message);
