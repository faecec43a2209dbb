import { afterAll, describe, expect, it } from "vitest";
import { getFreePort, privateNatsServers } from "@renderbus/testing";
import { Bus } from "./bus.js";

const servers = privateNatsServers("rb-bus-reconnect-");
afterAll(servers.stopAll);

async function eventually(condition: () => boolean, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

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
      await eventually(() => reconnects === 1);
      expect(removedCalls).toBe(0);

      await eventually(() => {
        bus.notify("reconnect.test", { n: "after" });
        return heard.includes("after");
      });
    } finally {
      await bus.close();
    }
  });
});
