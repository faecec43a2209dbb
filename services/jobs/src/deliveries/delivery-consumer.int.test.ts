import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { webhooks } from "@renderbus/contracts";
import { newId } from "@renderbus/ids";
import { metadataJob, startJobsHarness, testAuth, type JobsHarness } from "../testing/jobs-harness.js";

let harness: JobsHarness;
beforeAll(async () => {
  harness = await startJobsHarness("deliveries");
});
afterAll(async () => harness?.stop());

const publish = (update: webhooks.DeliveryUpdated) =>
  harness.bus.publish("webhooks.events.delivery.updated", update, { msgId: `${update.deliveryId}-${update.attempts}-${update.status}-${update.occurredAt}` });

async function eventually<T>(read: () => Promise<T>, accept: (value: T) => boolean, timeoutMs = 5000): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await read();
    if (accept(value) || Date.now() > deadline) return value;
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe("webhook deliveries on the job record", () => {
  it("shows the newest state of each delivery, ignoring redelivered and out-of-order updates", async () => {
    const auth = testAuth("pro");
    const { job } = await harness.client.submitJob({ job: metadataJob() }, { auth });
    const deliveryId = newId("del");
    const base = { deliveryId, orgId: auth.orgId, jobId: job!.id, event: "job.running" };
    await publish({ ...base, status: "pending", attempts: 1, lastAttemptAt: 1000, nextAttemptAt: 6000, lastResponseStatus: 500, lastError: "HTTP 500", occurredAt: 1000 });
    await publish({ ...base, status: "succeeded", attempts: 2, lastAttemptAt: 6000, lastResponseStatus: 200, occurredAt: 6000 });
    // An older update arriving late must not win.
    await publish({ ...base, status: "pending", attempts: 1, lastAttemptAt: 1000, nextAttemptAt: 6000, lastResponseStatus: 500, lastError: "HTTP 500", occurredAt: 999 });
    const other = newId("del");
    await publish({ deliveryId: other, orgId: auth.orgId, jobId: job!.id, event: "job.completed", status: "failed", attempts: 4, lastAttemptAt: 9000, lastError: "timeout", occurredAt: 9000 });

    const read = await eventually(
      () => harness.client.getJob({ jobId: job!.id }, { auth }),
      (value) => value.webhookDeliveries.length === 2 && value.webhookDeliveries.some((delivery) => delivery.status === "succeeded"),
    );
    await new Promise((resolve) => setTimeout(resolve, 300));
    const final = await harness.client.getJob({ jobId: job!.id }, { auth });
    expect(final.webhookDeliveries).toEqual(read.webhookDeliveries);
    expect(final.webhookDeliveries.find((delivery) => delivery.id === deliveryId)).toEqual({
      id: deliveryId,
      event: "job.running",
      status: "succeeded",
      attempts: 2,
      lastAttemptAt: 6000,
      lastResponseStatus: 200,
    });
    expect(final.webhookDeliveries.find((delivery) => delivery.id === other)).toMatchObject({ status: "failed", attempts: 4, lastError: "timeout" });
  });
});
