import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Bus, DISPATCH_MAX_DELIVER, STREAMS } from "@renderbus/bus";
import { createLogger } from "@renderbus/telemetry";
import { testInfra, testNamespace } from "@renderbus/testing";
import { consumeDispatches, WORKERS_DURABLE, type DispatchConsumer } from "./consume-dispatches.js";

let bus: Bus;
const logger = createLogger({ service: "poison-test", level: "silent" });

beforeAll(async () => {
  bus = await Bus.connect({ url: testInfra().natsUrl, name: "poison-dispatch-test", namespace: testNamespace("poison") });
  await bus.ensureStreams([STREAMS.jobDispatch]);
});
afterAll(async () => {
  await bus.jsm.streams.delete(bus.streamName(STREAMS.jobDispatch)).catch(() => undefined);
  await bus.close();
});

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe("poison dispatches (SECURITY-AUDIT finding 16)", () => {
  it("hands a dispatch whose processing always throws out DISPATCH_MAX_DELIVER times, then never again", async () => {
    const deliveries = new Map<string, number[]>();
    const start = (): Promise<DispatchConsumer> =>
      consumeDispatches({
        bus,
        logger,
        concurrency: 2,
        ackWaitMs: 1000,
        retryBaseMs: 10,
        async handle(dispatch, delivery) {
          deliveries.set(dispatch.jobId, [...(deliveries.get(dispatch.jobId) ?? []), delivery.deliveryCount]);
          throw new Error("poison");
        },
      });
    // Two replicas: the second finds the durable and updates it, which must keep the bound.
    const consumers = [await start(), await start()];
    try {
      const info = await bus.jsm.consumers.info(bus.streamName(STREAMS.jobDispatch), WORKERS_DURABLE);
      expect(info.config.max_deliver).toBe(DISPATCH_MAX_DELIVER);

      await bus.publish("jobs.dispatch.transcode", { jobId: "job_poison", orgId: "org_x", type: "transcode" }, { msgId: "poison-1" });
      const deadline = Date.now() + 20_000;
      while ((deliveries.get("job_poison")?.length ?? 0) < DISPATCH_MAX_DELIVER && Date.now() < deadline) await sleep(50);
      // Past every backoff and ack wait: nothing more comes.
      await sleep(3000);
      expect(deliveries.get("job_poison")).toEqual(Array.from({ length: DISPATCH_MAX_DELIVER }, (_, index) => index + 1));
    } finally {
      await Promise.all(consumers.map((consumer) => consumer.stop()));
    }
  });

  it("terminates a dispatch that is not JSON after one delivery, without handing it to the job runner", async () => {
    let handled = 0;
    const consumer = await consumeDispatches({ bus, logger, concurrency: 1, ackWaitMs: 1000, retryBaseMs: 10, handle: async () => void (handled += 1) });
    try {
      const before = await bus.jsm.consumers.info(bus.streamName(STREAMS.jobDispatch), WORKERS_DURABLE);
      await bus.publish("jobs.dispatch.transcode", "{not json", { msgId: "poison-2" });
      const deadline = Date.now() + 10_000;
      for (;;) {
        const info = await bus.jsm.consumers.info(bus.streamName(STREAMS.jobDispatch), WORKERS_DURABLE);
        if (info.delivered.stream_seq > before.delivered.stream_seq && info.num_ack_pending === 0) break;
        if (Date.now() > deadline) throw new Error("the unparsable dispatch was not settled");
        await sleep(50);
      }
      // Past the ack wait: a message left unsettled (or naked) would be back by now.
      await sleep(2000);
      const after = await bus.jsm.consumers.info(bus.streamName(STREAMS.jobDispatch), WORKERS_DURABLE);
      expect(after.num_ack_pending + after.num_redelivered - before.num_redelivered).toBe(0);
      expect(handled).toBe(0);
    } finally {
      await consumer.stop();
    }
  });
});

describe("the dispatch durable deleted under a running worker (SECURITY-AUDIT finding 17)", () => {
  it("is declared again, with its bound, and dispatches published afterwards are taken", async () => {
    const seen: string[] = [];
    const consumer = await consumeDispatches({ bus, logger, concurrency: 2, ackWaitMs: 1000, retryBaseMs: 10, handle: async (dispatch) => void seen.push(dispatch.jobId) });
    try {
      await bus.jsm.consumers.delete(bus.streamName(STREAMS.jobDispatch), WORKERS_DURABLE);
      await sleep(500);
      await bus.publish("jobs.dispatch.transcode", { jobId: "job_after_delete", orgId: "org_x", type: "transcode" }, { msgId: "after-delete" });
      const deadline = Date.now() + 20_000;
      while (!seen.includes("job_after_delete") && Date.now() < deadline) await sleep(50);
      expect(seen).toContain("job_after_delete");
      const info = await bus.jsm.consumers.info(bus.streamName(STREAMS.jobDispatch), WORKERS_DURABLE);
      expect(info.config.max_deliver).toBe(DISPATCH_MAX_DELIVER);
    } finally {
      await consumer.stop();
    }
  });

  it("reports not ready while the durable cannot be declared again (its stream is gone), and ready once it is", async () => {
    const consumer = await consumeDispatches({ bus, logger, concurrency: 1, ackWaitMs: 1000, retryBaseMs: 10, handle: async () => undefined });
    try {
      expect(consumer.isReady()).toBe(true);
      await bus.jsm.streams.delete(bus.streamName(STREAMS.jobDispatch));
      const until = async (ready: boolean) => {
        const deadline = Date.now() + 20_000;
        while (consumer.isReady() !== ready && Date.now() < deadline) await sleep(50);
        expect(consumer.isReady()).toBe(ready);
      };
      await until(false);
      await bus.ensureStreams([STREAMS.jobDispatch]);
      await until(true);
    } finally {
      await consumer.stop();
    }
  });
});
