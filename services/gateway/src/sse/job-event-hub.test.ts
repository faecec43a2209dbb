import { describe, expect, it } from "vitest";
import type { Bus } from "@renderbus/bus";
import { JobEventHub, SUBSCRIBED } from "./job-event-hub.js";

/** A bus that records subscriptions and confirms them when the test says so (NATS itself is outside this test). */
function fakeBus() {
  const subscriptions: Array<{ handler: (data: unknown, subject: string) => void; onSubscribed?: () => void; active: boolean }> = [];
  const bus = {
    listen: (_subject: string, handler: (data: unknown, subject: string) => void, options: { onSubscribed?: () => void } = {}) => {
      const entry = { handler, onSubscribed: options.onSubscribed, active: true };
      subscriptions.push(entry);
      return () => {
        entry.active = false;
      };
    },
  } as unknown as Bus;
  const active = () => subscriptions.filter((s) => s.active);
  const publish = (event: string, jobId: string) => {
    for (const s of active()) s.handler({ jobId }, `jobs.events.job.${event}`);
  };
  return { bus, subscriptions, active, publish };
}

describe("JobEventHub", () => {
  it("holds no subscription while nothing watches", () => {
    const { bus, subscriptions } = fakeBus();
    const hub = new JobEventHub(bus, 10);
    expect(hub.subscribed).toBe(false);
    expect(subscriptions).toHaveLength(0);
  });

  it("subscribes on the first watcher, shares it, and tells each watcher of its job", () => {
    const { bus, subscriptions, publish } = fakeBus();
    const hub = new JobEventHub(bus, 10);
    const seen: string[] = [];
    hub.watch("job_1", (event) => seen.push(`1:${event}`));
    hub.watch("job_2", (event) => seen.push(`2:${event}`));
    expect(subscriptions).toHaveLength(1);
    publish("running", "job_1");
    expect(seen).toEqual(["1:job.running"]);
    expect(hub.watcherCount).toBe(2);
  });

  it("tells every watcher once the subscription is active, so what was published before is re-read", () => {
    const { bus, subscriptions } = fakeBus();
    const hub = new JobEventHub(bus, 10);
    const seen: string[] = [];
    hub.watch("job_1", (event) => seen.push(event));
    subscriptions[0]!.onSubscribed?.();
    expect(seen).toEqual([SUBSCRIBED]);
  });

  it("lets the subscription go once the last watcher has been gone for the linger time, and subscribes again later", async () => {
    const { bus, subscriptions, active } = fakeBus();
    const hub = new JobEventHub(bus, 20);
    const stop = hub.watch("job_1", () => undefined);
    stop();
    stop(); // twice is harmless
    expect(hub.watcherCount).toBe(0);
    expect(active()).toHaveLength(1);
    await new Promise((resolve) => setTimeout(resolve, 60));
    expect(active()).toHaveLength(0);
    expect(hub.subscribed).toBe(false);
    hub.watch("job_2", () => undefined);
    expect(subscriptions).toHaveLength(2);
    expect(active()).toHaveLength(1);
  });

  it("keeps the subscription for a watcher that comes back within the linger time", async () => {
    const { bus, subscriptions, active } = fakeBus();
    const hub = new JobEventHub(bus, 40);
    hub.watch("job_1", () => undefined)();
    hub.watch("job_1", () => undefined);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(subscriptions).toHaveLength(1);
    expect(active()).toHaveLength(1);
  });

  it("close() unsubscribes and forgets every watcher", () => {
    const { bus, active } = fakeBus();
    const hub = new JobEventHub(bus, 10);
    const stop = hub.watch("job_1", () => undefined);
    hub.close();
    stop();
    expect(active()).toHaveLength(0);
    expect(hub.watcherCount).toBe(0);
  });
});
