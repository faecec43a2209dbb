import type { Bus } from "@renderbus/bus";
import { ListenersByKey } from "./listeners-by-key.js";

type Listener = (event: string) => void;

/** How long the hub keeps its subscription after the last watcher left (a client polling with waits reuses it). */
export const JOB_EVENTS_LINGER_MS = 30_000;

/** What a watcher is told when the subscription has just become active: it re-reads, as for an event. */
export const SUBSCRIBED = "subscribed";

/**
 * One subscription to every job event for the whole gateway, fanned out to the SSE streams and waits watching each
 * job, so a thousand open streams cost one NATS subscription rather than a thousand.
 *
 * Subscribed only while something watches (and {@link JOB_EVENTS_LINGER_MS} after): every job event of every org
 * otherwise costs the replica a decode and NATS a fan-out, for nobody (measured in the webhook benchmark: the gateway
 * spent 0.01-0.04 ms of CPU per job event with no stream open). The first watchers may miss events published before
 * the server has the new subscription, so once it has, every watcher is told ({@link SUBSCRIBED}) and re-reads.
 */
export class JobEventHub {
  private readonly listeners = new ListenersByKey<string>();
  private unsubscribe: (() => void) | undefined;
  private linger: NodeJS.Timeout | undefined;

  constructor(
    private readonly bus: Bus,
    private readonly lingerMs = JOB_EVENTS_LINGER_MS,
  ) {}

  /** Listeners registered right now (one per open job stream); `/metrics` shows it so a leak is visible. */
  get watcherCount(): number {
    return this.listeners.count;
  }

  /** Whether the NATS subscription is open. */
  get subscribed(): boolean {
    return this.unsubscribe !== undefined;
  }

  watch(jobId: string, listener: Listener): () => void {
    const remove = this.listeners.add(jobId, listener);
    this.subscribe();
    return () => {
      remove();
      if (this.listeners.count === 0) this.unsubscribeLater();
    };
  }

  close(): void {
    clearTimeout(this.linger);
    this.unsubscribe?.();
    this.unsubscribe = undefined;
    this.listeners.clear();
  }

  private subscribe(): void {
    clearTimeout(this.linger);
    this.linger = undefined;
    if (this.unsubscribe) return;
    this.unsubscribe = this.bus.listen<{ jobId?: string }>(
      "jobs.events.job.*",
      (data, subject) => {
        const jobId = data?.jobId;
        if (!jobId) return;
        this.listeners.notify(jobId, subject.slice("jobs.events.".length));
      },
      { onSubscribed: () => this.listeners.notifyAll(SUBSCRIBED) },
    );
  }

  private unsubscribeLater(): void {
    clearTimeout(this.linger);
    // A new watcher clears this timer (subscribe), so when it fires nobody watches.
    this.linger = setTimeout(() => {
      this.linger = undefined;
      this.unsubscribe?.();
      this.unsubscribe = undefined;
    }, this.lingerMs);
    this.linger.unref();
  }
}
