import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { webhooks } from "@renderbus/contracts";
import { newId } from "@renderbus/ids";
import { eventually } from "@renderbus/testing";
import { metadataJob, startJobsHarness, testAuth, type JobsHarness } from "../testing/jobs-harness.js";
import { STREAMS } from "@renderbus/bus";
import { DELIVERIES_UPDATED_SUBJECT, DELIVERY_BATCHES_DURABLE, DELIVERY_UPDATED_SUBJECT } from "./delivery-consumer.js";
import { projectDeliveries, type DeliveryState } from "./project-delivery.js";

let harness: JobsHarness;
beforeAll(async () => {
  harness = await startJobsHarness("deliveries");
});
afterAll(async () => harness?.stop());

/** A lone DeliveryUpdated, as dispatchers published before batches (still in the stream during a rolling upgrade). */
const publish = (update: DeliveryState) =>
  harness.bus.publish(DELIVERY_UPDATED_SUBJECT, update, { msgId: `${update.deliveryId}-${update.attempts}-${update.status}-${update.occurredAt}` });

/** A DeliveriesUpdated, as the dispatcher publishes one per group of attempts. */
const publishBatch = (updates: DeliveryState[]) => {
  const body: webhooks.DeliveriesUpdated = { updates: updates.map((update) => ({ ...update, trace: { traceparent: `00-${"c".repeat(32)}-${"d".repeat(16)}-01` } })) };
  return harness.bus.publish(DELIVERIES_UPDATED_SUBJECT, body, { msgId: newId("evt") });
};

describe("webhook deliveries on the job record", () => {
  it("shows the newest state of each delivery, ignoring redelivered and out-of-order updates (lone DeliveryUpdated messages)", async () => {
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

  it("projects every update of a DeliveriesUpdated batch, deliveries of several jobs and orgs together", async () => {
    const [auth, otherAuth] = [testAuth("pro"), testAuth("pro")];
    const { job } = await harness.client.submitJob({ job: metadataJob() }, { auth });
    const { job: otherJob } = await harness.client.submitJob({ job: metadataJob() }, { auth: otherAuth });
    const [running, completed, other] = [newId("del"), newId("del"), newId("del")];
    await publishBatch([
      { deliveryId: running, orgId: auth.orgId, jobId: job!.id, event: "job.running", status: "succeeded", attempts: 1, lastAttemptAt: 1000, lastResponseStatus: 200, occurredAt: 1000 },
      { deliveryId: completed, orgId: auth.orgId, jobId: job!.id, event: "job.completed", status: "pending", attempts: 1, lastAttemptAt: 2000, nextAttemptAt: 7000, lastResponseStatus: 503, occurredAt: 2000 },
      { deliveryId: other, orgId: otherAuth.orgId, jobId: otherJob!.id, event: "job.running", status: "failed", attempts: 5, lastAttemptAt: 3000, lastError: "timeout", occurredAt: 3000 },
      { deliveryId: newId("del"), orgId: auth.orgId, jobId: job!.id, event: "job.progress", status: "succeeded", attempts: 1, occurredAt: 1500 },
    ]);
    // A later batch moves one of them on; an older lone update arriving after it changes nothing.
    await publishBatch([{ deliveryId: completed, orgId: auth.orgId, jobId: job!.id, event: "job.completed", status: "succeeded", attempts: 2, lastAttemptAt: 7000, lastResponseStatus: 200, occurredAt: 7000 }]);
    await publish({ deliveryId: completed, orgId: auth.orgId, jobId: job!.id, event: "job.completed", status: "pending", attempts: 1, lastAttemptAt: 2000, nextAttemptAt: 7000, lastResponseStatus: 503, occurredAt: 2000 });

    const read = await eventually(
      () => harness.client.getJob({ jobId: job!.id }, { auth }),
      (value) => value.webhookDeliveries.length === 2 && value.webhookDeliveries.every((delivery) => delivery.status === "succeeded"),
    );
    expect(read.webhookDeliveries.map((delivery) => [delivery.id, delivery.status, delivery.attempts]).sort()).toEqual(
      [
        [running, "succeeded", 1],
        [completed, "succeeded", 2],
      ].sort(),
    );
    const otherRead = await eventually(
      () => harness.client.getJob({ jobId: otherJob!.id }, { auth: otherAuth }),
      (value) => value.webhookDeliveries.length === 1,
    );
    expect(otherRead.webhookDeliveries).toEqual([expect.objectContaining({ id: other, status: "failed", attempts: 5, lastError: "timeout" })]);
  });

  it("acks batches that are not lists of updates and goes on projecting the next one", async () => {
    const auth = testAuth("pro");
    const { job } = await harness.client.submitJob({ job: metadataJob() }, { auth });
    for (const body of [{ updates: "x" }, { updates: [null, 7] }, null, "not json"]) {
      await harness.bus.publish(DELIVERIES_UPDATED_SUBJECT, body, { msgId: newId("evt") });
    }
    const deliveryId = newId("del");
    await publishBatch([{ deliveryId, orgId: auth.orgId, jobId: job!.id, event: "job.running", status: "succeeded", attempts: 1, lastAttemptAt: 1000, lastResponseStatus: 200, occurredAt: 1000 }]);
    const read = await eventually(
      () => harness.client.getJob({ jobId: job!.id }, { auth }),
      (value) => value.webhookDeliveries.length === 1,
    );
    expect(read.webhookDeliveries).toEqual([expect.objectContaining({ id: deliveryId, status: "succeeded" })]);
    // Each malformed one was acked at once, not handed back to be redelivered forever. The good batch's ack follows its
    // write, so the projection can be visible a moment before the server has the ack: wait for it, then look.
    const durable = await eventually(
      () => harness.bus.jsm.consumers.info(harness.bus.streamName(STREAMS.webhookEvents), DELIVERY_BATCHES_DURABLE),
      (info) => info.num_ack_pending === 0,
    );
    expect([durable.num_ack_pending, durable.num_redelivered]).toEqual([0, 0]);
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
    // Lone updates and batches of ten mixed, as during a rolling upgrade of the dispatcher.
    const update = (deliveryId: string, attempts: number): DeliveryState =>
      attempts === 1
        ? { deliveryId, orgId: auth.orgId, jobId: job!.id, event: "job.running", status: "pending", attempts: 1, lastResponseStatus: 500, occurredAt: 1000 }
        : { deliveryId, orgId: auth.orgId, jobId: job!.id, event: "job.running", status: "succeeded", attempts: 2, lastResponseStatus: 200, occurredAt: 2000 };
    await Promise.all([
      ...ids.map((deliveryId) => publish(update(deliveryId, 1))),
      ...Array.from({ length: 6 }, (_, i) => publishBatch(ids.slice(i * 10, i * 10 + 10).map((deliveryId) => update(deliveryId, 2)))),
    ]);
    const read = await eventually(
      () => harness.client.getJob({ jobId: job!.id }, { auth }),
      (value) => value.webhookDeliveries.length === ids.length && value.webhookDeliveries.every((delivery) => delivery.status === "succeeded"),
    );
    expect(read.webhookDeliveries).toHaveLength(ids.length);
    expect(read.webhookDeliveries.every((delivery) => delivery.status === "succeeded" && delivery.attempts === 2)).toBe(true);
  });
});
