import { WaitTimeoutError, RenderbusError } from "./errors.js";
import { TERMINAL_STATUSES, type Job } from "./types.js";

/** What watching a job needs of the client (the SDK's client has it): its job's SSE stream, and a read to poll. */
export interface JobReader {
  jobs: {
    get(jobId: string): Promise<Job>;
    events(jobId: string, signal?: AbortSignal): AsyncIterable<Job>;
  };
}

export interface WaitForJobOptions {
  /** Give up after this long (default 10 minutes) with WaitTimeoutError. */
  timeoutMs?: number;
  /** Called with the job on every status change and every progress reading seen (for progress displays). */
  onUpdate?: (job: Job) => void;
  signal?: AbortSignal;
}

const isTerminal = (job: Job) => TERMINAL_STATUSES.includes(job.status);
/** A job worth yielding after `last`: another status, or newer progress. */
const changed = (job: Job, last: Job | undefined) => job.status !== last?.status || (job.progress?.updatedAt ?? null) !== (last?.progress?.updatedAt ?? null);
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * Yields the job on each status change and each new progress reading (`job.progress`, at most every 500 ms while
 * it runs) until it is terminal. Follows the job's SSE stream; when the stream cannot
 * be opened or drops (proxy timeout, gateway restart) it polls `GET /jobs/{id}` with backoff (0.5 s doubling to
 * 5 s) and reopens the stream, so a flaky connection slows updates down but never loses the outcome.
 */
export async function* watchJob(client: JobReader, jobId: string, { timeoutMs = 600_000, signal }: WaitForJobOptions = {}): AsyncGenerator<Job> {
  const deadline = Date.now() + timeoutMs;
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), timeoutMs);
  const onAbort = () => controller.abort();
  signal?.addEventListener("abort", onAbort, { once: true });
  let last: Job | undefined;
  let backoffMs = 500;
  try {
    for (;;) {
      try {
        for await (const job of client.jobs.events(jobId, controller.signal)) {
          backoffMs = 500;
          if (changed(job, last)) {
            last = job;
            yield job;
          }
          if (isTerminal(job)) return;
        }
      } catch (error) {
        // API errors other than availability (NOT_FOUND, UNAUTHORIZED) will not heal by waiting.
        if (error instanceof RenderbusError && error.status > 0 && ![429, 502, 503, 504].includes(error.status)) throw error;
        if (signal?.aborted) throw signal.reason;
      }
      if (Date.now() >= deadline) throw new WaitTimeoutError(jobId, last?.status ?? null);
      const job = await client.jobs.get(jobId);
      if (changed(job, last)) {
        last = job;
        yield job;
      }
      if (isTerminal(job)) return;
      await sleep(Math.min(backoffMs, Math.max(0, deadline - Date.now())));
      backoffMs = Math.min(backoffMs * 2, 5_000);
    }
  } finally {
    clearTimeout(timer);
    signal?.removeEventListener("abort", onAbort);
  }
}

/** Resolves with the terminal job (completed, failed or cancelled: check `status`); throws WaitTimeoutError. */
export async function waitForJob(client: JobReader, jobId: string, options: WaitForJobOptions = {}): Promise<Job> {
  let last: Job | undefined;
  for await (const job of watchJob(client, jobId, options)) {
    last = job;
    options.onUpdate?.(job);
  }
  if (!last) throw new WaitTimeoutError(jobId, null);
  return last;
}
