import { RenderbusConnectionError, RenderbusError, WaitTimeoutError } from "../errors.js";

/** Exit codes of `renderbus` (documented in the README): stable, so scripts can branch on them. */
export const EXIT = {
  /** Success. */
  OK: 0,
  /** The API answered with an error (validation, not found, conflict, rate limited, ...) or something unexpected. */
  API_ERROR: 1,
  /** Bad command line: unknown command or option, missing or malformed argument. */
  USAGE: 2,
  /** The job failed or was cancelled (`jobs submit --wait`, `jobs watch`), or a test webhook was not answered 2xx. */
  JOB_FAILED: 3,
  /** Not logged in, or the key is invalid, revoked or not allowed (401 / 403). */
  AUTH: 4,
  /** The API could not be reached. */
  UNREACHABLE: 5,
  /** `--timeout` passed before the job finished. */
  TIMEOUT: 6,
} as const;

/** A problem with the command line, reported with exit code 2. */
export class UsageError extends Error {}

/** Ends the command with an exit code and a message (for outcomes that are not exceptions, e.g. a failed job). */
export class ExitError extends Error {
  constructor(readonly exitCode: number, message: string) {
    super(message);
  }
}

export function exitCodeOf(error: unknown): number {
  if (error instanceof ExitError) return error.exitCode;
  if (error instanceof UsageError) return EXIT.USAGE;
  if (error instanceof WaitTimeoutError) return EXIT.TIMEOUT;
  if (error instanceof RenderbusConnectionError) return EXIT.UNREACHABLE;
  if (error instanceof RenderbusError) return error.status === 401 || error.code === "FORBIDDEN" ? EXIT.AUTH : EXIT.API_ERROR;
  return EXIT.API_ERROR;
}

export function messageOf(error: unknown): string {
  if (error instanceof RenderbusError && error.status > 0) {
    return `${error.code}: ${error.message}${error.requestId ? ` (request ${error.requestId})` : ""}`;
  }
  return error instanceof Error ? error.message : String(error);
}
