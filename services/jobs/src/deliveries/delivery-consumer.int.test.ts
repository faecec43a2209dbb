import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { webhooks } from "@renderbus/contracts";
import { newId } from "@renderbus/ids";
import { metadataJob, startJobsHarness, testAuth, type JobsHarness } from "../testing/jobs-harness.js";
import { projectDeliveries } from "./project-delivery.js";

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
    // Progress deliveries stay out of the job record (docs/webhooks.md, "Progress events").
    await publish({ deliveryId: newId("del"), orgId: auth.orgId, jobId: job!.id, event: "job.progress", status: "succeeded", attempts: 1, lastAttemptAt: 7000, lastResponseStatus: 200, occurredAt: 7000 });

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

  it("keeps the newest update of a delivery when one group holds several, in any order", async () => {
    const auth = testAuth("pro");
    const { job } = await harness.client.submitJob({ job: metadataJob() }, { auth });
    const deliveryId = newId("del");
    const base = { deliveryId, orgId: auth.orgId, jobId: job!.id, event: "job.completed" };
    const first = { ...base, status: "pending", attempts: 1, lastAttemptAt: 1000, nextAttemptAt: 6000, lastResponseStatus: 503, occurredAt: 1000 };
    const second = { ...base, status: "pending", attempts: 2, lastAttemptAt: 6000, nextAttemptAt: 31000, lastResponseStatus: 503, occurredAt: 6000 };
    const third = { ...base, status: "succeeded", attempts: 3, lastAttemptAt: 31000, lastResponseStatus: 204, occurredAt: 31000 };
    await projectDeliveries(harness.service.db, [second, third, first, second, { ...base, status: "pending", attempts: 0, occurredAt: 500 }]);
    // A later group with only older news changes nothing.
    await projectDeliveries(harness.service.db, [first, second]);

    const stored = await harness.service.db.selectFrom("webhook_deliveries").selectAll().where("id", "=", deliveryId).execute();
    expect(stored).toHaveLength(1);
    expect(stored[0]).toMatchObject({ status: "succeeded", attempts: 3, last_response_status: 204, occurred_at: 31000 });
  });

  it("projects a burst of updates for many deliveries, each delivery ending in its newest state", async () => {
    const auth = testAuth("pro");
    const { job } = await harness.client.submitJob({ job: metadataJob() }, { auth });
    const ids = Array.from({ length: 60 }, () => newId("del"));
    await Promise.all(
      ids.flatMap((deliveryId) => [
        publish({ deliveryId, orgId: auth.orgId, jobId: job!.id, event: "job.running", status: "pending", attempts: 1, lastResponseStatus: 500, occurredAt: 1000 }),
        publish({ deliveryId, orgId: auth.orgId, jobId: job!.id, event: "job.running", status: "succeeded", attempts: 2, lastResponseStatus: 200, occurredAt: 2000 }),
      ]),
    );
    const read = await eventually(
      () => harness.client.getJob({ jobId: job!.id }, { auth }),
      (value) => value.webhookDeliveries.length === ids.length && value.webhookDeliveries.every((delivery) => delivery.status === "succeeded"),
    );
    expect(read.webhookDeliveries).toHaveLength(ids.length);
    expect(read.webhookDeliveries.every((delivery) => delivery.status === "succeeded" && delivery.attempts === 2)).toBe(true);
  });
});
