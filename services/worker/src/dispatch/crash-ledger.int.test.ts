import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Bus, STREAMS } from "@renderbus/bus";
import type { jobEvents } from "@renderbus/contracts";
import { createLogger } from "@renderbus/telemetry";
import { testInfra, testNamespace } from "@renderbus/testing";
import { consumeDispatches, type DispatchDelivery } from "./consume-dispatches.js";
import { CrashLedger, WORKER_ATTEMPTS } from "./crash-ledger.js";

const logger = createLogger({ service: "crash-ledger-test", level: "warn" });
let bus: Bus;

beforeAll(async () => {
  bus = await Bus.connect({ url: testInfra().natsUrl, name: "crash-ledger-test", namespace: testNamespace("crashledger") });
  await bus.ensureStreams([STREAMS.jobDispatch, WORKER_ATTEMPTS]);
});

afterAll(async () => {
  await bus?.close();
});

let counter = 0;
const newJobId = () => `job_ledger${Date.now()}${counter++}`;

describe("crash ledger", () => {
  it("counts deliveries that never ended, across ledgers (replicas), and forgets a delivery that ended", async () => {
    const jobId = newJobId();
    const first = new CrashLedger(bus, "worker-a", logger);
    const second = new CrashLedger(bus, "worker-b", logger);
    expect(await first.begin(jobId, 1)).toBe(0);
    // worker-a died holding it: the next delivery, on another replica, sees one crash.
    expect(await second.begin(jobId, 2)).toBe(1);
    expect(await first.begin(jobId, 3)).toBe(2);
    await first.end(jobId);
    // Ended (ack / nak): the next delivery starts clean.
    expect(await second.begin(jobId, 4)).toBe(0);
    await second.end(jobId);
  });

  it("does not count naks: a delivery that ended before the redelivery leaves no marker", async () => {
    const jobId = newJobId();
    const ledger = new CrashLedger(bus, "worker-a", logger);
    for (let delivery = 1; delivery <= 4; delivery++) {
      expect(await ledger.begin(jobId, delivery)).toBe(0);
      await ledger.end(jobId);
    }
  });
});

describe("settling a dispatch with term", () => {
  it("ends its deliveries: a termed dispatch is not handed out again", async () => {
    const deliveries: Array<{ jobId: string; deliveryCount: number }> = [];
    let termed: DispatchDelivery | undefined;
    const consumer = await consumeDispatches({
      bus,
      logger,
      concurrency: 1,
      ackWaitMs: 1000,
      async handle(dispatch: jobEvents.JobDispatch, delivery) {
        deliveries.push({ jobId: dispatch.jobId, deliveryCount: delivery.deliveryCount });
        termed = delivery;
        return { term: "processing this job crashed the worker twice" };
      },
    });
    const jobId = newJobId();
    await bus.publish("jobs.dispatch.transcode", { jobId, orgId: "org_test", type: "transcode" }, { msgId: `dispatch-${jobId}` });
    // Past two ack deadlines: an unrecognised term would have been redelivered by now.
    await new Promise((resolve) => setTimeout(resolve, 3500));
    await consumer.stop();
    expect(termed).toBeDefined();
    expect(deliveries).toEqual([{ jobId, deliveryCount: 1 }]);
  });
});
