import type { Bus } from "@renderbus/bus";
import { ListenersByKey } from "./listeners-by-key.js";

type Listener = (event: string) => void;

/**
 * One subscription to every job event for the whole gateway, fanned out to the SSE streams watching each job, so
 * a thousand open streams cost one NATS subscription rather than a thousand.
 */
export class JobEventHub {
  private readonly listeners = new ListenersByKey<string>();
  private readonly unsubscribe: () => void;

  constructor(bus: Bus) {
    this.unsubscribe = bus.listen<{ jobId?: string }>("jobs.events.job.*", (data, subject) => {
      const jobId = data?.jobId;
      if (!jobId) return;
      this.listeners.notify(jobId, subject.slice("jobs.events.".length));
    });
  }

  /** Listeners registered right now (one per open job stream); `/metrics` shows it so a leak is visible. */
  get watcherCount(): number {
    return this.listeners.count;
  }

  watch(jobId: string, listener: Listener): () => void {
    return this.listeners.add(jobId, listener);
  }

  close(): void {
    this.unsubscribe();
    this.listeners.clear();
  }
}
