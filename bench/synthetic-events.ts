import { randomBytes } from "node:crypto";
import type { Bus } from "@renderbus/bus";
import type { jobEvents } from "@renderbus/contracts";
import { preciseNow } from "./stats.js";

/**
 * Synthetic `job.running` events published straight onto the namespace's job-event stream, so the dispatcher is
 * measured alone (no jobs, no workers). `job.running` rather than `job.completed`: the auth billing consumer settles
 * credits on completed/failed events and would do (failing) work for jobs that do not exist; it ignores running.
 * `startedAt` is the publish time, which the dispatcher copies into the payload's `timing.startedAt`: the receiver
 * computes the event -> attempt lag from it (same machine, same clock).
 */
export class SyntheticEvents {
  private readonly run = randomBytes(3).toString("hex");
  private sequence = 0;
  private readonly sentAt = new Map<string, number>();

  constructor(
    private readonly bus: Bus,
    private readonly orgIds: string[],
  ) {}

  /** Job ids of this generator start with this prefix. */
  get jobIdPrefix(): string {
    return `job_bench${this.run}`;
  }

  /** When the event of `jobId` was published (preciseNow), for lags with sub-millisecond resolution. */
  publishedAt(jobId: string): number | undefined {
    return this.sentAt.get(jobId);
  }

  /** Publishes one event (round-robin over the orgs); resolves on the stream's ack. */
  publish(): Promise<unknown> {
    const n = this.sequence++;
    const now = Date.now();
    this.sentAt.set(`${this.jobIdPrefix}${n}`, preciseNow());
    const event: jobEvents.JobStarted = {
      jobId: `${this.jobIdPrefix}${n}`,
      orgId: this.orgIds[n % this.orgIds.length]!,
      type: "extract.metadata",
      createdAt: now,
      startedAt: now,
      workerId: "bench",
    };
    return this.bus.publish("jobs.events.job.running", event, {
      msgId: `evt_bench${this.run}${n}`,
      headers: { "Rb-Event-Type": "job.running", "Rb-Org-Id": event.orgId },
    });
  }

  /** Publishes `count` events as fast as the stream acks them, `window` at a time. */
  async burst(count: number, window = 256): Promise<void> {
    for (let sent = 0; sent < count; ) {
      const chunk = Math.min(window, count - sent);
      await Promise.all(Array.from({ length: chunk }, () => this.publish()));
      sent += chunk;
    }
  }

  /** Publishes at `perSecond` for `seconds`, in 20 ms ticks; returns the number published and the achieved rate. */
  async paced(perSecond: number, seconds: number): Promise<{ published: number; perSecond: number }> {
    const total = Math.round(perSecond * seconds);
    const started = performance.now();
    const acks: Promise<unknown>[] = [];
    let published = 0;
    while (published < total) {
      const due = Math.min(total, Math.floor(((performance.now() - started) / 1000) * perSecond) + 1);
      while (published < due) {
        acks.push(this.publish());
        published += 1;
      }
      await new Promise((resolve) => setTimeout(resolve, 20 - ((performance.now() - started) % 20)));
    }
    const elapsed = (performance.now() - started) / 1000;
    await Promise.all(acks);
    return { published, perSecond: Math.round(published / Math.max(elapsed, seconds)) };
  }
}
