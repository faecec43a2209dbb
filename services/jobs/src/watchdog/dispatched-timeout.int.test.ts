import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "kysely";
import { DISPATCH_DURABLE, DISPATCH_MAX_DELIVER, nanos, type Bus } from "@renderbus/bus";
import { dispatchSubject } from "../job/job-messages.js";
import { metadataJob, startJobsHarness, STREAMS, testAuth, type JobsHarness } from "../testing/jobs-harness.js";
import { notStartedMessage } from "./job-timeout-watchdog.js";

/**
 * The dispatched timeout ends a job whose dispatch is dead (dropped, or out of deliveries), timed from when the
 * watchdog first saw its work message leave the queue; a job whose message waits in the stream for a free worker is
 * never failed for it, however long it waits (SPEC §2: never rejected for concurrency).
 */

const DISPATCHED_TIMEOUT_MS = 800;
const JOB_HOLD_TTL_MS = 600;
const JOB_HOLD_MAX_MS = 1500;

// Types reached through the Bus, as the worker does (the jobs service has no direct dependency on the NATS packages).
type ConsumerConfig = NonNullable<Parameters<Bus["jsm"]["consumers"]["add"]>[1]>;

let harness: JobsHarness;
let stream: string;
beforeAll(async () => {
  harness = await startJobsHarness("dispatchedwatchdog", {
    env: {
      PLANS_JSON: JSON.stringify({ free: { concurrency: 1 } }),
      DISPATCHED_TIMEOUT_MS: String(DISPATCHED_TIMEOUT_MS),
      JOB_HOLD_TTL_MS: String(JOB_HOLD_TTL_MS),
      JOB_HOLD_MAX_MS: String(JOB_HOLD_MAX_MS),
      // Lost dispatches are not sent again here: the timeout is what ends them.
      DISPATCH_RESENDS: "0",
      // Ticks are driven by the test.
      JOBS_WATCHDOG_INTERVAL_MS: "600000",
    },
  });
  stream = harness.bus.streamName(STREAMS.jobDispatch);
});
afterAll(async () => harness?.stop());

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

/** A free org's two jobs: the first dispatched (its work message queued, no worker here), the second waiting for the slot. */
async function firstDispatchedSecondWaiting() {
  const auth = testAuth("free");
  const first = (await harness.client.submitJob({ job: metadataJob() }, { auth })).job!.id;
  const second = (await harness.client.submitJob({ job: metadataJob() }, { auth })).job!.id;
  await harness.settle();
  expect((await harness.client.getJob({ jobId: first }, { auth })).status).toBe("dispatched");
  expect((await harness.client.getJob({ jobId: second }, { auth })).status).toBe("waiting");
  return { auth, first, second };
}

const statusOf = async (jobId: string, auth: ReturnType<typeof testAuth>) => (await harness.client.getJob({ jobId }, { auth })).status;

/**
 * The workers' shared durable, declared as a worker declares it (ack deadline long enough to hold a message here);
 * one already there is kept.
 */
async function declareWorkersDurable(): Promise<void> {
  const config: ConsumerConfig = {
    durable_name: DISPATCH_DURABLE,
    ack_policy: "explicit" as ConsumerConfig["ack_policy"],
    ack_wait: nanos(60_000),
    max_deliver: DISPATCH_MAX_DELIVER,
    deliver_policy: "all" as ConsumerConfig["deliver_policy"],
    filter_subject: harness.bus.subject("jobs.dispatch.>"),
  };
  await harness.bus.jsm.consumers.add(stream, config).catch((error: unknown) => {
    if (!/already (in use|exists)/.test(String(error))) throw error;
  });
}

/** What a worker that never starts the job does: takes its work message from the durable and holds it, unacked. */
async function deliverAndHold(jobId: string): Promise<void> {
  const consumer = await harness.bus.js.consumers.get(stream, DISPATCH_DURABLE);
  for (;;) {
    const message = await consumer.next({ expires: 2000 });
    expect(message, `the work message of ${jobId}`).not.toBeNull();
    if (message!.subject === harness.bus.subject(dispatchSubject("extract.metadata", jobId))) return;
    // An earlier test's message: taken and done with, as a worker would.
    message!.ack();
  }
}

async function expectFailedAndSlotFreed(first: string, second: string, auth: ReturnType<typeof testAuth>): Promise<void> {
  await harness.settle();
  expect(await harness.client.getJob({ jobId: first }, { auth })).toMatchObject({
    status: "failed",
    error: { code: "PROVIDER_ERROR", message: notStartedMessage(DISPATCHED_TIMEOUT_MS) },
  });
  // The freed slot went to the waiting job.
  await expect.poll(() => statusOf(second, auth), { timeout: 10_000 }).toBe("dispatched");
}

/** Ends a test's jobs, so a later test may take their work messages from the durable (as a worker would) unharmed. */
async function cancel(auth: ReturnType<typeof testAuth>, ...jobIds: string[]): Promise<void> {
  for (const jobId of jobIds) await harness.client.cancelJob({ jobId }, { auth });
  await harness.settle();
}

const unqueuedRecords = async () => (await sql<{ job_id: string }>`select job_id from unqueued_dispatches`.execute(harness.service.db)).rows.map((row) => row.job_id);

describe("watchdog for jobs stuck in dispatched (SECURITY-AUDIT finding 16)", () => {
  it("never fails a job whose work message is still queued for a free worker, however long past DISPATCHED_TIMEOUT_MS", async () => {
    const { auth, first, second } = await firstDispatchedSecondWaiting();
    // No worker ever started: the workers' durable does not even exist.
    for (let pass = 0; pass < 4; pass += 1) {
      await pause(DISPATCHED_TIMEOUT_MS / 2 + 100);
      expect(await harness.service.watchdog.tick()).toBe(0);
    }
    expect(await statusOf(first, auth)).toBe("dispatched");
    expect(await statusOf(second, auth)).toBe("waiting");
    expect(await unqueuedRecords()).toEqual([]);
    await cancel(auth, second, first);
  });

  it("fails a job a worker took but never started, DISPATCHED_TIMEOUT_MS after the watchdog first saw it taken, with a clear PROVIDER_ERROR, and its slot goes to the org's next job", async () => {
    await declareWorkersDurable();
    const { auth, first, second } = await firstDispatchedSecondWaiting();
    // Queued behind busy workers past the timeout: still waiting, and nothing recorded.
    await pause(DISPATCHED_TIMEOUT_MS + 100);
    expect(await harness.service.watchdog.tick()).toBe(0);
    expect(await statusOf(first, auth)).toBe("dispatched");

    // A worker takes it and never starts it (stuck downloading, killed, or its deliveries run out): timed from here.
    await deliverAndHold(first);
    expect(await harness.service.watchdog.tick()).toBe(0);
    expect(await unqueuedRecords()).toEqual([first]);
    await pause(DISPATCHED_TIMEOUT_MS / 2);
    expect(await harness.service.watchdog.tick()).toBe(0);
    expect(await statusOf(first, auth)).toBe("dispatched");

    await pause(DISPATCHED_TIMEOUT_MS / 2 + 100);
    expect(await harness.service.watchdog.tick()).toBe(1);
    await expectFailedAndSlotFreed(first, second, auth);
    // The record goes with the job's dispatched state.
    await harness.service.watchdog.tick();
    expect(await unqueuedRecords()).toEqual([]);
    await cancel(auth, second);
  });

  it("fails a job whose work message is gone from the stream (resends off), DISPATCHED_TIMEOUT_MS after the watchdog first saw it gone", async () => {
    const { auth, first, second } = await firstDispatchedSecondWaiting();
    await pause(DISPATCHED_TIMEOUT_MS + 100);
    expect(await harness.service.watchdog.tick()).toBe(0);

    // Dropped (a fault, or acked without a start): gone from the stream.
    const message = await harness.bus.lastMessage(STREAMS.jobDispatch, dispatchSubject("extract.metadata", first));
    await harness.bus.jsm.streams.deleteMessage(stream, message!.seq);
    expect(await harness.service.watchdog.tick()).toBe(0);
    expect(await statusOf(first, auth)).toBe("dispatched");

    await pause(DISPATCHED_TIMEOUT_MS + 100);
    expect(await harness.service.watchdog.tick()).toBe(1);
    await expectFailedAndSlotFreed(first, second, auth);
    await cancel(auth, second);
  });

  it("times a job taken by a worker anew once its work message is queued again (the workers' durable re-created)", async () => {
    await declareWorkersDurable();
    const { auth, first, second } = await firstDispatchedSecondWaiting();
    await deliverAndHold(first);
    expect(await harness.service.watchdog.tick()).toBe(0);
    expect(await unqueuedRecords()).toContain(first);

    await harness.bus.jsm.consumers.delete(stream, DISPATCH_DURABLE);
    await declareWorkersDurable();
    expect(await harness.service.watchdog.tick()).toBe(0);
    expect(await unqueuedRecords()).not.toContain(first);
    await pause(DISPATCHED_TIMEOUT_MS + 100);
    expect(await harness.service.watchdog.tick()).toBe(0);
    expect(await statusOf(first, auth)).toBe("dispatched");
    await cancel(auth, second, first);
  });

  it("keeps a job its worker holds while preparing it (a long download) past DISPATCHED_TIMEOUT_MS, and fails it once the holds stop for JOB_HOLD_TTL_MS", async () => {
    await declareWorkersDurable();
    const { auth, first, second } = await firstDispatchedSecondWaiting();
    await deliverAndHold(first);
    expect(await harness.service.watchdog.tick()).toBe(0);
    // What the worker's job holder does every second while the inputs download.
    const holdUntil = Date.now() + DISPATCHED_TIMEOUT_MS + 400;
    while (Date.now() < holdUntil) {
      await harness.client.holdJob({ jobId: first, workerId: "w" });
      await pause(150);
      expect(await harness.service.watchdog.tick()).toBe(0);
    }
    expect(await statusOf(first, auth)).toBe("dispatched");

    await pause(JOB_HOLD_TTL_MS + 100);
    expect(await harness.service.watchdog.tick()).toBe(1);
    await expectFailedAndSlotFreed(first, second, auth);
    // The job has ended: a worker still preparing it hears so from its next hold, and stops.
    await expect(harness.client.holdJob({ jobId: first, workerId: "w" })).rejects.toMatchObject({ code: "CONFLICT" });
    await cancel(auth, second);
  });

  it("never lets holds keep a job more than JOB_HOLD_MAX_MS past its dispatched timeout (a worker hung while holding)", async () => {
    await declareWorkersDurable();
    const { auth, first, second } = await firstDispatchedSecondWaiting();
    await deliverAndHold(first);
    expect(await harness.service.watchdog.tick()).toBe(0);
    const heldFrom = Date.now();
    let failed = 0;
    while (failed === 0) {
      expect(Date.now() - heldFrom, "failed while its holds go on").toBeLessThan(DISPATCHED_TIMEOUT_MS + JOB_HOLD_MAX_MS + 20_000);
      await harness.client.holdJob({ jobId: first, workerId: "w" });
      await pause(150);
      failed = await harness.service.watchdog.tick();
    }
    // Not before the cap: the holds did keep it past the timeout first.
    expect(Date.now() - heldFrom).toBeGreaterThan(DISPATCHED_TIMEOUT_MS + JOB_HOLD_MAX_MS - 500);
    await expectFailedAndSlotFreed(first, second, auth);
    await cancel(auth, second);
  });

  it("leaves a started job to the run-time limit", async () => {
    const auth = testAuth("pro");
    const jobId = (await harness.client.submitJob({ job: metadataJob() }, { auth })).job!.id;
    await harness.settle();
    await harness.client.startJob({ jobId, workerId: "w" });
    await new Promise((resolve) => setTimeout(resolve, DISPATCHED_TIMEOUT_MS + 100));
    await harness.service.watchdog.tick();
    expect((await harness.client.getJob({ jobId }, { auth })).status).toBe("running");
  });
});
