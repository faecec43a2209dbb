import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { testInfra, testNamespace } from "@renderbus/testing";
import { Bus } from "./bus.js";
import type { StreamSpec } from "./streams.js";

const EVENTS: StreamSpec = { name: "RECOVERY_TEST", subjects: ["recovery.>"], duplicateWindowMs: 60_000 };

let namespace: string;
let bus: Bus;
const unhandled: unknown[] = [];
const onUnhandled = (reason: unknown) => unhandled.push(reason);

async function until(condition: () => boolean | Promise<boolean>, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

beforeAll(async () => {
  process.on("unhandledRejection", onUnhandled);
  namespace = testNamespace("busrecovery");
  bus = await Bus.connect({ url: testInfra().natsUrl, name: "bus-recovery-test", namespace });
  await bus.ensureStreams([EVENTS]);
});

afterAll(async () => {
  process.off("unhandledRejection", onUnhandled);
  for await (const name of bus.jsm.streams.names()) {
    if (name.startsWith(`${namespace}_`)) await bus.jsm.streams.delete(name);
  }
  await bus.close();
});

describe("Bus.consume when its durable is deleted under it (SECURITY-AUDIT finding 17)", () => {
  it("goes not ready, re-creates the durable, becomes ready again and handles what is published afterwards, with no unhandled rejection", async () => {
    const seen: number[] = [];
    const readiness: boolean[] = [];
    const stopListening = bus.onReadinessChange((ready) => readiness.push(ready));
    const consumer = await bus.consume<{ n: number }>({
      stream: EVENTS,
      durable: "deleted_under_it",
      filterSubjects: ["recovery.a"],
      handler: async (message) => void seen.push(message.data.n),
    });
    try {
      expect(bus.isReady()).toBe(true);
      await bus.publish("recovery.a", { n: 1 });
      await until(() => seen.includes(1));

      await bus.jsm.consumers.delete(bus.streamName(EVENTS), "deleted_under_it");
      await until(() => readiness.includes(false));
      expect(bus.isReady()).toBe(false);

      // Recovery re-creates the durable itself: nobody else declares it again.
      await until(() => bus.isReady());
      expect(readiness).toEqual([false, true]);
      const info = await bus.jsm.consumers.info(bus.streamName(EVENTS), "deleted_under_it");
      expect(info.name).toBe("deleted_under_it");

      await bus.publish("recovery.a", { n: 2 });
      await until(() => seen.includes(2));
      // Give a late rejection of the deleted iterator a chance to surface.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(unhandled).toEqual([]);
    } finally {
      stopListening();
      await consumer.stop();
    }
  });

  it("keeps retrying while the stream itself is gone, and resumes once it exists again", async () => {
    const spec: StreamSpec = { name: "RECOVERY_GONE", subjects: ["gone.>"] };
    await bus.ensureStreams([spec]);
    const seen: number[] = [];
    const consumer = await bus.consume<{ n: number }>({ stream: spec, durable: "stream_gone", handler: async (message) => void seen.push(message.data.n) });
    try {
      await bus.jsm.streams.delete(bus.streamName(spec));
      await until(() => !bus.isReady());
      // Down for a few attempts: the loop keeps waiting (with backoff) instead of dying.
      await new Promise((resolve) => setTimeout(resolve, 1500));
      expect(bus.isReady()).toBe(false);
      await bus.ensureStreams([spec]);
      await until(() => bus.isReady(), 20_000);
      await bus.publish("gone.x", { n: 7 });
      await until(() => seen.includes(7));
      expect(unhandled).toEqual([]);
    } finally {
      await consumer.stop();
    }
  });

  it("is ready again once a stopped consumer is gone", async () => {
    const consumer = await bus.consume({ stream: EVENTS, durable: "stopped_one", handler: async () => undefined });
    await bus.jsm.consumers.delete(bus.streamName(EVENTS), "stopped_one");
    await until(() => !bus.isReady());
    await consumer.stop();
    expect(bus.isReady()).toBe(true);
  });
});
