import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "@renderbus/ids";
import { eventually } from "@renderbus/testing";
import type { AuthContext } from "@renderbus/rpc";
import { metadataJob, startJobsHarness, STREAMS, testAuth, type JobsHarness } from "../testing/jobs-harness.js";
import { ORG_PLANS_DURABLE, ORG_UPDATED_SUBJECT } from "./org-plan-consumer.js";

let harness: JobsHarness;
beforeAll(async () => {
  harness = await startJobsHarness("orgplans");
});
afterAll(async () => harness?.stop());

/** What the auth service's outbox publishes when an org's plan (or webhook target) changes. */
const announce = (orgId: string, plan: unknown, occurredAt: unknown) =>
  harness.bus.publish(ORG_UPDATED_SUBJECT, { orgId, plan, occurredAt }, { msgId: newId("evt") });

const statuses = async (auth: AuthContext) => (await harness.client.listJobs({ limit: 100 }, { auth })).jobs.map((job) => job.status);
const dispatched = (list: string[]) => list.filter((status) => status === "dispatched").length;

async function submit(auth: AuthContext, count: number): Promise<string[]> {
  const ids: string[] = [];
  for (let index = 0; index < count; index += 1) ids.push((await harness.client.submitJob({ job: metadataJob() }, { auth })).job!.id);
  await harness.settle();
  return ids;
}

describe("an org's plan change reaches its waiting jobs", () => {
  it("dispatches jobs waiting behind a free plan's 2 slots as soon as the org moves to pro (10)", async () => {
    const auth = testAuth("free");
    await submit(auth, 6);
    expect(dispatched(await statuses(auth))).toBe(2);

    await announce(auth.orgId, "pro", Date.now());
    expect(dispatched(await eventually(() => statuses(auth), (list) => dispatched(list) === 6))).toBe(6);
  });

  it("holds the next jobs back after a downgrade until the org is under its new plan, and ignores an older announcement", async () => {
    const auth = testAuth("pro");
    const first = await submit(auth, 4);
    expect(dispatched(await statuses(auth))).toBe(4);
    const downgradedAt = Date.now();
    await announce(auth.orgId, "free", downgradedAt);
    // The announcement that came late (it is older than the downgrade) changes nothing.
    await announce(auth.orgId, "scale", downgradedAt - 60_000);
    const row = await eventually(
      () => harness.service.db.selectFrom("org_plans").selectAll().where("org_id", "=", auth.orgId).executeTakeFirst(),
      (value) => value !== undefined,
    );
    expect(row).toMatchObject({ plan: "free", changed_at: downgradedAt });

    const [next] = await submit(auth, 1);
    // 4 hold slots on a plan of 2: the new job waits while 3, then 2 of them finish, and starts when 1 is left.
    for (const jobId of first.slice(0, 2)) await harness.client.failJob({ jobId, error: { code: "PROVIDER_ERROR", message: "stopped by the test" } });
    await harness.settle();
    expect((await harness.client.getJob({ jobId: next! }, { auth })).status).toBe("waiting");
    await harness.client.failJob({ jobId: first[2]!, error: { code: "PROVIDER_ERROR", message: "stopped by the test" } });
    await harness.settle();
    expect((await harness.client.getJob({ jobId: next! }, { auth })).status).toBe("dispatched");
  });

  it("acks announcements that are not an org's plan and goes on", async () => {
    const auth = testAuth("free");
    await submit(auth, 3);
    for (const [plan, occurredAt] of [["enterprise", Date.now()], [7, Date.now()], ["pro", "yesterday"]] as const) await announce(auth.orgId, plan, occurredAt);
    await harness.bus.publish(ORG_UPDATED_SUBJECT, "not json", { msgId: newId("evt") });
    await announce(auth.orgId, "starter", Date.now());
    expect(dispatched(await eventually(() => statuses(auth), (list) => dispatched(list) === 3))).toBe(3);
    const durable = await eventually(
      () => harness.bus.jsm.consumers.info(harness.bus.streamName(STREAMS.authEvents), ORG_PLANS_DURABLE),
      (info) => info.num_ack_pending === 0,
    );
    expect([durable.num_ack_pending, durable.num_redelivered]).toEqual([0, 0]);
  });
});
