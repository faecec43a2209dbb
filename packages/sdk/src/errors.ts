/**
 * Thrown for every error response of the API: `code` is the error code (docs/concepts.md#errors) (`NOT_FOUND`, `RATE_LIMITED`, ...),
 * `status` the HTTP status, `requestId` the `X-Request-Id` to quote when asking for support.
 */
export class RenderbusError extends Error {
  override readonly name: string = "RenderbusError";
  constructor(
    readonly code: string,
    message: string,
    readonly status: number,
    readonly requestId: string | null = null,
    /** For RATE_LIMITED / SERVICE_UNAVAILABLE: how long the server asked to wait (Retry-After), in ms. */
    readonly retryAfterMs: number | null = null,
  ) {
    super(message);
  }
}

/** Thrown when the API could not be reached (DNS, refused connection, reset, timeout) after every retry. */
export class RenderbusConnectionError extends RenderbusError {
  override readonly name = "RenderbusConnectionError";
  constructor(message: string, options?: { cause?: unknown }) {
    super("CONNECTION_ERROR", message, 0);
    if (options?.cause !== undefined) (this as { cause?: unknown }).cause = options.cause;
  }
}

/** Thrown by `waitForJob` when the job is not terminal within `timeoutMs`; `job` is the last state seen. */
export class WaitTimeoutError extends RenderbusError {
  override readonly name = "WaitTimeoutError";
  constructor(
    readonly jobId: string,
    readonly lastStatus: string | null,
  ) {
    super("WAIT_TIMEOUT", `Job ${jobId} did not finish in time (last status: ${lastStatus ?? "unknown"})`, 0);
  }
}
