import { afterAll, describe, expect, it } from "vitest";
import { getFreePort, privateNatsServers } from "@renderbus/testing";
import { Bus } from "./bus.js";

const servers = privateNatsServers("rb-js-start-up-");
const natsServer = servers.start;
const stopped = servers.stop;

afterAll(servers.stopAll);

describe("a service starting while JetStream does not answer yet", () => {
  it("connects and declares its streams once JetStream is up, instead of failing its start-up", async () => {
    const port = await getFreePort();
    // A server whose JetStream is not up: the API has no responder, as on a cluster still forming.
    const early = await natsServer(port, false);
    const connecting = Bus.connect({ url: `nats://127.0.0.1:${port}`, name: "js-start-up-test" }).then(async (bus) => {
      await bus.ensureStreams([{ name: "START_UP_TEST", subjects: ["startup.>"], duplicateWindowMs: 60_000 }]);
      return bus;
    });
    let settled = false;
    void connecting.then(
      () => (settled = true),
      () => (settled = true),
    );
    await new Promise((resolve) => setTimeout(resolve, 1500));
    expect(settled).toBe(false);

    await stopped(early);
    await natsServer(port, true);
    const bus = await connecting;
    try {
      expect((await bus.jsm.streams.info("START_UP_TEST")).config.subjects).toEqual(["startup.>"]);
    } finally {
      await bus.close();
    }
  });
});
