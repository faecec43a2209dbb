/**
 * The jobs this process is running, each with an AbortController that stops its downloads and its ffmpeg
 * process. Cancellation events and shutdown abort through here.
 */
export class RunningJobs {
  private readonly controllers = new Map<string, AbortController>();

  /** Registers a job and returns the signal its work listens to. */
  start(jobId: string): AbortSignal {
    const controller = new AbortController();
    this.controllers.set(jobId, controller);
    return controller.signal;
  }

  finish(jobId: string): void {
    this.controllers.delete(jobId);
  }

  /** Stops a job if this process runs it; returns whether it did. */
  cancel(jobId: string): boolean {
    const controller = this.controllers.get(jobId);
    if (!controller) return false;
    controller.abort();
    return true;
  }

  cancelAll(): void {
    for (const controller of this.controllers.values()) controller.abort();
  }

  get size(): number {
    return this.controllers.size;
  }
}
