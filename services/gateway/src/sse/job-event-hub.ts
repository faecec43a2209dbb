import type { Bus } from "@renderbus/bus";

type Listener = (event: string) => void;

/**
 * One subscription to every job event for the whole gateway, fanned out to the SSE streams watching each job, so
 * a thousand open streams cost one NATS subscription rather than a thousand.
 */
export class JobEventHub {
  private readonly listeners = new Map<string, Set<Listener>>();
  private readonly unsubscribe: () => void;

  constructor(bus: Bus) {
    this.unsubscribe = bus.listen<{ jobId?: string }>("jobs.events.job.*", (data, subject) => {
      const jobId = data?.jobId;
      if (!jobId) return;
      for (const listener of this.listeners.get(jobId) ?? []) listener(subject.slice("jobs.events.".length));
    });
  }

  /** Listeners registered right now (one per open job stream); `/metrics` shows it so a leak is visible. */
  get watcherCount(): number {
    let count = 0;
    for (const set of this.listeners.values()) count += set.size;
    return count;
  }

  watch(jobId: string, listener: Listener): () => void {
    const set = this.listeners.get(jobId) ?? new Set();
    set.add(listener);
    this.listeners.set(jobId, set);
    return () => {
      set.delete(listener);
      if (set.size === 0) this.listeners.delete(jobId);
    };
  }

  close(): void {
    this.unsubscribe();
    this.listeners.clear();
  }
}
