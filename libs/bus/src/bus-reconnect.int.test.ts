import { afterAll, describe, expect, it, vi } from "vitest";
import { getFreePort, privateNatsServers } from "@renderbus/testing";
import { Bus } from "./bus.js";

const servers = privateNatsServers("rb-bus-reconnect-");
afterAll(servers.stopAll);

const WAIT = { timeout: 15_000, interval: 20 };

describe("a bus whose NATS connection is lost", () => {
  it("tells its reconnect listeners once it is back, with core subscriptions working again", async () => {
    const port = await getFreePort();
    const first = await servers.start(port, true);
    const bus = await Bus.connect({ url: `nats://127.0.0.1:${port}`, name: "bus-reconnect-test" });
    try {
      let reconnects = 0;
      let removedCalls = 0;
      bus.onReconnect(() => (reconnects += 1));
      const remove = bus.onReconnect(() => (removedCalls += 1));
      remove();
      const heard: string[] = [];
      bus.listen<{ n: string }>("reconnect.test", (data) => heard.push(data.n));

      // Notices published while the connection is down are lost: this is what the listeners are told about.
      await servers.stop(first);
      await servers.start(port, true);
      await vi.waitFor(() => expect(reconnects).toBe(1), WAIT);
      expect(removedCalls).toBe(0);

      await vi.waitFor(() => {
        bus.notify("reconnect.test", { n: "after" });
        expect(heard).toContain("after");
      }, WAIT);
    } finally {
      await bus.close();
    }
  });
});
