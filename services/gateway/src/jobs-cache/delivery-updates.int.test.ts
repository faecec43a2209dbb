import { afterAll, describe, expect, it, vi } from "vitest";
import { Bus } from "@renderbus/bus";
import type { jobs } from "@renderbus/contracts";
import { getFreePort, privateNatsServers } from "@renderbus/testing";
import { followDeliveryUpdates } from "./delivery-updates.js";
import { TerminalJobCache } from "./terminal-job-cache.js";

const servers = privateNatsServers("rb-gateway-delivery-updates-");
afterAll(servers.stopAll);

const WAIT = { timeout: 15_000, interval: 20 };

const finished = (id: string): jobs.Job => ({ id, orgId: "org_a", status: "completed", type: "thumbnail", webhookDeliveries: [] }) as unknown as jobs.Job;

describe("the gateway's finished jobs follow their delivery updates", () => {
  it("drops a job when an update of its deliveries arrives, and every job once its NATS connection came back", async () => {
    const port = await getFreePort();
    const first = await servers.start(port, true);
    const bus = await Bus.connect({ url: `nats://127.0.0.1:${port}`, name: "gateway-delivery-updates-test" });
    const cache = new TerminalJobCache({ ttlMs: 600_000 });
    const stop = followDeliveryUpdates(bus, cache);
    try {
      for (const id of ["job_1", "job_2", "job_3"]) cache.remember(finished(id));
      bus.notify("webhooks.events.deliveries.updated", { updates: [{ jobId: "job_1" }] });
      bus.notify("webhooks.events.delivery.updated", { jobId: "job_2" });
      await vi.waitFor(() => expect(cache.size).toBe(1), WAIT);
      expect(cache.get("org_a", "job_3")).toBeDefined();

      // Updates published while the connection is down never arrive: job_3's log may have moved meanwhile.
      await servers.stop(first);
      await servers.start(port, true);
      await vi.waitFor(() => expect(cache.size).toBe(0), WAIT);
    } finally {
      stop();
      await bus.close();
    }
  });
});
