import { AsyncLocalStorage } from "node:async_hooks";
import type { DispatchDelivery } from "./consume-dispatches.js";

interface RunningJob {
  controller: AbortController;
  delivery: DispatchDelivery | undefined;
}

/**
 * The jobs this process is running, each with an AbortController that stops its downloads and its ffmpeg
 * process. Cancellation events and shutdown abort through here. Each job's work runs inside {@link RunningJobs.run},
 * so an uncaught error thrown from a callback of that work names its job ({@link RunningJobs.current}).
 */
export class RunningJobs {
  private readonly jobs = new Map<string, RunningJob>();
  private readonly context = new AsyncLocalStorage<string>();

  /** Registers a job and returns the signal its work listens to. */
  start(jobId: string, delivery?: DispatchDelivery): AbortSignal {
    const controller = new AbortController();
    this.jobs.set(jobId, { controller, delivery });
    return controller.signal;
  }

  /** Runs a job's work with the job as its async context. */
  run<T>(jobId: string, work: () => Promise<T>): Promise<T> {
    return this.context.run(jobId, work);
  }

  /** The job whose work is running now (in an uncaught-exception handler: the job whose callback threw). */
  current(): string | undefined {
    return this.context.getStore();
  }

  finish(jobId: string): void {
    this.jobs.delete(jobId);
  }

  /** Stops a job if this process runs it; returns whether it did. */
  cancel(jobId: string): boolean {
    const job = this.jobs.get(jobId);
    if (!job) return false;
    job.controller.abort();
    return true;
  }

  cancelAll(): void {
    for (const job of this.jobs.values()) job.controller.abort();
  }

  /** The job ids running now with their deliveries. */
  entries(): Array<[string, DispatchDelivery | undefined]> {
    return [...this.jobs].map(([jobId, job]) => [jobId, job.delivery]);
  }

  get size(): number {
    return this.jobs.size;
  }
}
