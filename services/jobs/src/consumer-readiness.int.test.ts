import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { STREAMS } from "@renderbus/bus";
import { checkRpcHealth } from "@renderbus/rpc";
import { DELIVERIES_DURABLE } from "./deliveries/delivery-consumer.js";
import { startJobsHarness, type JobsHarness } from "./testing/jobs-harness.js";

let harness: JobsHarness;
beforeAll(async () => {
  harness = await startJobsHarness("consumerreadiness");
});
afterAll(async () => harness?.stop());

describe("jobs service health follows its JetStream consumers (SECURITY-AUDIT finding 17)", () => {
  it("answers NOT_SERVING while a deleted durable is being re-created, then SERVING again, and keeps running", async () => {
    const address = `127.0.0.1:${harness.service.grpcPort}`;
    expect(await checkRpcHealth(address)).toBe("SERVING");
    const stream = harness.bus.streamName(STREAMS.webhookEvents);
    const durables: string[] = [];
    for await (const info of harness.bus.jsm.consumers.list(stream)) {
      if (info.name === DELIVERIES_DURABLE || info.name.startsWith(`${DELIVERIES_DURABLE}_`)) durables.push(info.name);
    }
    expect(durables.length).toBeGreaterThan(0);
    const seen: string[] = [];
    const watching = (async () => {
      const deadline = Date.now() + 20_000;
      while (Date.now() < deadline && !(seen.includes("NOT_SERVING") && seen.at(-1) === "SERVING")) {
        seen.push(await checkRpcHealth(address).catch(() => "UNREACHABLE"));
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
    })();
    await harness.bus.jsm.consumers.delete(stream, durables[0]!);
    await watching;
    expect(seen).toContain("NOT_SERVING");
    expect(seen.at(-1)).toBe("SERVING");
    expect(seen).not.toContain("UNREACHABLE");
    // Re-created by the service itself.
    expect((await harness.bus.jsm.consumers.info(stream, durables[0]!)).name).toBe(durables[0]);
  });
});
