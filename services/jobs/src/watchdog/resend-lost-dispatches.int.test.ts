import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { sql } from "kysely";
import { metadataJob, startJobsHarness, STREAMS, testAuth, type JobsHarness } from "../testing/jobs-harness.js";
import { dispatchSubject } from "../job/job-messages.js";

/**
 * A job whose work message left the dispatch stream without any worker starting it (acked or terminated without a
 * start, or lost in a NATS cluster fault) gets it sent again, recorded and with a new message id, at most
 * DISPATCH_RESENDS times; a dispatch still in the stream (queued, or held by a worker that is downloading) is left
 * to JetStream. Two replicas' watchdogs never send the same resend twice.
 */

const RESEND_AFTER_MS = 300;
const RESENDS = 2;

let harness: JobsHarness;
let stream: string;
beforeAll(async () => {
  harness = await startJobsHarness("resenddispatch", {
    replicas: 2,
    env: {
      DISPATCH_RESEND_AFTER_MS: String(RESEND_AFTER_MS),
      DISPATCH_RESENDS: String(RESENDS),
      DISPATCHED_TIMEOUT_MS: "600000",
      // Ticks are driven by the test.
      JOBS_WATCHDOG_INTERVAL_MS: "600000",
    },
  });
  stream = harness.bus.streamName(STREAMS.jobDispatch);
});
afterAll(async () => harness?.stop());

const pause = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function dispatchedJob(): Promise<{ jobId: string; subject: string }> {
  const auth = testAuth("pro");
  const jobId = (await harness.client.submitJob({ job: metadataJob() }, { auth })).job!.id;
  await harness.settle();
  expect((await harness.client.getJob({ jobId }, { auth })).status).toBe("dispatched");
  return { jobId, subject: dispatchSubject("extract.metadata", jobId) };
}

/** The work message on the job's subject, or null once it left the stream. */
const workMessage = (subject: string) => harness.bus.lastMessage(STREAMS.jobDispatch, subject);

/** What a worker's ack (or a cluster fault) does to a work message: it leaves the work-queue stream. */
async function loseWorkMessage(subject: string): Promise<void> {
  const message = await workMessage(subject);
  expect(message).not.toBeNull();
  await harness.bus.jsm.streams.deleteMessage(stream, message!.seq);
}

const resendsOf = async (jobId: string) =>
  (await sql<{ resends: number }>`select resends from dispatch_resends where job_id = ${jobId}`.execute(harness.service.db)).rows[0]?.resends ?? 0;

async function tickBothReplicas(): Promise<void> {
  await Promise.all([harness.service.watchdog.tick(), harness.replica!.watchdog.tick()]);
  await harness.settle();
}

describe("resending lost dispatches", () => {
  it("leaves a dispatch that is still in the stream to JetStream, however long the job waits", async () => {
    const { jobId, subject } = await dispatchedJob();
    const original = await workMessage(subject);
    await pause(RESEND_AFTER_MS * 2);
    await tickBothReplicas();
    expect(await resendsOf(jobId)).toBe(0);
    expect((await workMessage(subject))!.seq).toBe(original!.seq);
  });

  it("sends a lost dispatch again once per interval from one replica, with a new message id, up to DISPATCH_RESENDS times", async () => {
    const { jobId, subject } = await dispatchedJob();
    const original = (await workMessage(subject))!;
    const dispatchEventId = original.header.get("Nats-Msg-Id");
    await loseWorkMessage(subject);
    await pause(RESEND_AFTER_MS + 50);

    await tickBothReplicas();
    const first = await workMessage(subject);
    expect(first).not.toBeNull();
    expect(first!.header.get("Nats-Msg-Id")).toBe(`${dispatchEventId}:resend:1`);
    expect(first!.header.get("Rb-Dispatch-Resend")).toBe("1");
    expect(first!.json()).toEqual(original.json());
    expect(await resendsOf(jobId)).toBe(1);

    // Lost again at once: the next resend waits for the interval after the last one.
    await loseWorkMessage(subject);
    await tickBothReplicas();
    expect(await workMessage(subject)).toBeNull();
    await pause(RESEND_AFTER_MS + 50);
    await tickBothReplicas();
    expect((await workMessage(subject))!.header.get("Nats-Msg-Id")).toBe(`${dispatchEventId}:resend:2`);
    expect(await resendsOf(jobId)).toBe(RESENDS);

    // Out of resends: the dispatched timeout will fail it.
    await loseWorkMessage(subject);
    await pause(RESEND_AFTER_MS + 50);
    await tickBothReplicas();
    expect(await workMessage(subject)).toBeNull();
    expect(await resendsOf(jobId)).toBe(RESENDS);
  });

  it("sends nothing for a job that started meanwhile", async () => {
    const { jobId, subject } = await dispatchedJob();
    await harness.client.startJob({ jobId, workerId: "w" });
    await loseWorkMessage(subject);
    await pause(RESEND_AFTER_MS + 50);
    await tickBothReplicas();
    expect(await workMessage(subject)).toBeNull();
    expect(await resendsOf(jobId)).toBe(0);
  });

  it("reads each dispatched job's work message from the stream once per pass: the resend check and the dispatched timeout share it", async () => {
    const { jobId, subject } = await dispatchedJob();
    await pause(RESEND_AFTER_MS + 50);
    // Every direct read of a stored message is a request on this subject; count those naming the job's subject.
    let reads = 0;
    const watched = harness.bus.subject(subject);
    const subscription = harness.bus.nc.subscribe(`$JS.API.STREAM.MSG.GET.${stream}`, {
      callback: (_error, message) => {
        if (message.string().includes(watched)) reads += 1;
      },
    });
    await harness.bus.nc.flush();
    await harness.service.watchdog.tick();
    await harness.bus.nc.flush();
    subscription.unsubscribe();
    expect(reads).toBe(1);
    expect(await resendsOf(jobId)).toBe(0);
  });
});
