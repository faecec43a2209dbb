import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "kysely";
import { metadataJob, startJobsHarness, testAuth, type JobsHarness } from "../testing/jobs-harness.js";

const HOUR = 60 * 60 * 1000;
const DAY = 24 * HOUR;

let harness: JobsHarness;
beforeAll(async () => {
  harness = await startJobsHarness("jobsretention");
});
afterAll(async () => harness?.stop());

const db = () => harness.service.db;

describe("jobs retention sweep (SECURITY-AUDIT finding 21)", () => {
  it("deletes idempotency keys past their 24 h and keeps younger ones, which still replay", async () => {
    const auth = testAuth("pro");
    const first = await harness.client.submitJob({ job: metadataJob(), idempotencyKey: "young" }, { auth });
    const now = Date.now();
    await db()
      .insertInto("idempotency_keys")
      .values([
        { org_id: auth.orgId, key: "expired", request_hash: "h", state: "done", response: "null", created_at: now - 24 * HOUR - 1 },
        { org_id: auth.orgId, key: "expired-pending", request_hash: "h", state: "pending", response: "null", created_at: now - 30 * HOUR },
        { org_id: auth.orgId, key: "almost", request_hash: "h", state: "done", response: "null", created_at: now - 23 * HOUR },
      ])
      .execute();

    const deleted = await harness.service.retention.sweep(now);
    expect(deleted.idempotency_keys).toBeGreaterThanOrEqual(2);
    const keys = await db().selectFrom("idempotency_keys").select("key").where("org_id", "=", auth.orgId).orderBy("key").execute();
    expect(keys.map((row) => row.key)).toEqual(["almost", "young"]);
    const again = await harness.client.submitJob({ job: metadataJob(), idempotencyKey: "young" }, { auth });
    expect(again).toMatchObject({ replayed: true, job: { id: first.job!.id } });
  });

  it("deletes finished webhook deliveries on job records past DELIVERY_RETENTION_DAYS (30), never a pending one", async () => {
    const now = Date.now();
    const row = (id: string, status: string, ageMs: number) => ({
      id,
      org_id: "org_retention",
      job_id: "job_retention",
      event: "job.completed",
      status,
      attempts: 1,
      last_attempt_at: now - ageMs,
      next_attempt_at: null,
      last_response_status: 200,
      last_error: null,
      occurred_at: now - ageMs,
    });
    await db()
      .insertInto("webhook_deliveries")
      .values([
        row("del_old_ok", "succeeded", 31 * DAY),
        row("del_old_failed", "failed", 30 * DAY + 1),
        row("del_old_pending", "pending", 40 * DAY),
        row("del_recent", "succeeded", 29 * DAY),
      ])
      .execute();

    expect((await harness.service.retention.sweep(now)).webhook_deliveries).toBe(2);
    const left = await db().selectFrom("webhook_deliveries").select("id").where("job_id", "=", "job_retention").orderBy("id").execute();
    expect(left.map((delivery) => delivery.id)).toEqual(["del_old_pending", "del_recent"]);
  });

  it("never prunes the event store, the job records or the batches, however old", async () => {
    const auth = testAuth("pro");
    const { job } = await harness.client.submitJob({ job: metadataJob() }, { auth });
    const batch = await harness.client.submitBatch({ jobs: [metadataJob()] }, { auth });
    await harness.settle();
    // Make everything look a year old.
    await sql`update events set created_at = 1`.execute(db());
    await sql`update job_views set created_at = 1`.execute(db());
    await sql`update batch_views set created_at = 1`.execute(db());
    const count = async () =>
      (await sql<{ events: number; jobs: number; batches: number }>`
        select (select count(*)::int from events) as events, (select count(*)::int from job_views) as jobs,
               (select count(*)::int from batch_views) as batches`.execute(db())).rows[0]!;
    const before = await count();

    await harness.service.retention.sweep(Date.now() + 365 * DAY);
    expect(await count()).toEqual(before);
    expect((await harness.client.getJob({ jobId: job!.id }, { auth })).id).toBe(job!.id);
    expect((await harness.client.getBatch({ batchId: batch.id }, { auth })).id).toBe(batch.id);
  });
});
