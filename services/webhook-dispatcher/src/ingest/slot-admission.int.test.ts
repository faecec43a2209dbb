import type { ServerResponse } from "node:http";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "@renderbus/ids";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import type { DispatcherService } from "../service.js";
import { connectPublisher, eventually, jobCompletedEvent, sleep, startFakeAuth, startReceiver, startTestDispatcher, testConfig } from "../testing/dispatcher-harness.js";

/**
 * A job event owing a delivery waits for a free attempt slot of the replica (DISPATCHER_INGEST_SLOT_WAIT_MS) before
 * its delivery is written: written leased, it is attempted at once, without a claim.
 */

let fakeAuth: Awaited<ReturnType<typeof startFakeAuth>>;
let publisher: Awaited<ReturnType<typeof connectPublisher>>;
const databases: pg.Client[] = [];
const dispatchers: DispatcherService[] = [];
const receivers: { stop(): Promise<void> }[] = [];

beforeAll(async () => {
  fakeAuth = await startFakeAuth();
});

afterAll(async () => {
  await Promise.all(dispatchers.map((dispatcher) => dispatcher.stop()));
  await publisher?.close();
  await Promise.all(databases.map((database) => database.end()));
  await fakeAuth?.stop();
  await Promise.all(receivers.map((receiver) => receiver.stop()));
});

/**
 * A dispatcher with 2 attempt slots, its own database and namespace (no other replica claims its rows), and a
 * receiver that holds requests until told to answer.
 */
async function twoSlotDispatcher(slotWaitMs: number, { slots = 2, overrides = {} }: { slots?: number; overrides?: Record<string, string> } = {}) {
  const { natsUrl } = testInfra();
  const databaseUrl = await createTestDatabase("dispatcheradmit");
  const base = { databaseUrl, natsUrl, authAddress: fakeAuth.address };
  const database = new pg.Client({ connectionString: databaseUrl });
  await database.connect();
  databases.push(database);
  const namespace = testNamespace("admit");
  await publisher?.close();
  publisher = await connectPublisher(base.natsUrl, namespace);
  const held: ServerResponse[] = [];
  let holding = true;
  const receiver = await startReceiver((_request, response) => (holding ? held.push(response) : response.writeHead(200).end("ok")));
  receivers.push(receiver);
  const orgId = newId("org");
  fakeAuth.setTarget({ orgId, plan: "pro", url: receiver.url, secret: "s" });
  const dispatcher = await startTestDispatcher(
      testConfig({ ...base, namespace }, { DISPATCHER_CONCURRENCY: String(slots), DISPATCHER_ORG_MAX_IN_FLIGHT: "8", DISPATCHER_INGEST_SLOT_WAIT_MS: String(slotWaitMs), WEBHOOK_TIMEOUT_MS: "600000", ...overrides }),
  );
  dispatchers.push(dispatcher);
  const rowsOf = async () =>
    (await database.query<{ job_id: string; status: string; lease_token: string | null }>("select job_id, status, lease_token from dispatcher.deliveries where org_id = $1", [orgId])).rows;
  const release = () => {
    holding = false;
    for (const response of held.splice(0)) response.writeHead(200).end("ok");
  };
  const publishCompleted = (jobId: string) => publisher.publish("job.completed", jobCompletedEvent(orgId, jobId));
  /** Publishes one event per slot and waits until the receiver holds all their attempts; returns their job ids. */
  const fillSlots = async () => {
    const jobIds = Array.from({ length: slots }, () => newId("job"));
    for (const jobId of jobIds) await publishCompleted(jobId);
    await receiver.waitFor(slots);
    return jobIds;
  };
  const stop = async () => {
    dispatchers.splice(dispatchers.indexOf(dispatcher), 1);
    await dispatcher.stop();
  };
  return { receiver, held, rowsOf, release, publishCompleted, fillSlots, stop };
}

describe("events waiting for an attempt slot", () => {
  it("writes nothing while every slot is busy, then writes the waiting events leased and attempts them", async () => {
    const { receiver, rowsOf, release, publishCompleted, fillSlots } = await twoSlotDispatcher(20_000);
    const first = await fillSlots();

    const later = [newId("job"), newId("job"), newId("job")];
    for (const jobId of later) await publishCompleted(jobId);
    await sleep(700);
    // The three later events wait for a slot in the consumer (unacked), not as rows waiting for a claim.
    expect((await rowsOf()).map((row) => row.job_id).sort()).toEqual([...first].sort());
    expect(receiver.received).toHaveLength(2);

    release();
    await receiver.waitFor(5);
    const rows = await eventually(async () => {
      const current = await rowsOf();
      return current.length === 5 && current.every((row) => row.status === "succeeded") && current;
    });
    expect(rows.map((row) => row.job_id).sort()).toEqual([...first, ...later].sort());
  });

  it("writes an event that waited DISPATCHER_INGEST_SLOT_WAIT_MS for a claim, so it shows as pending, and a freed slot claims it", async () => {
    const { receiver, rowsOf, release, publishCompleted, fillSlots } = await twoSlotDispatcher(300);
    await fillSlots();

    const waiting = newId("job");
    await publishCompleted(waiting);
    const row = await eventually(async () => (await rowsOf()).find((candidate) => candidate.job_id === waiting));
    expect(row).toMatchObject({ status: "pending", lease_token: null });
    expect(receiver.received).toHaveLength(2);

    release();
    await receiver.waitFor(3);
    expect(receiver.received[2]!.json.jobId).toBe(waiting);
  });

  /**
   * Ten events behind one slot whose attempts are answered one at a time, 150 ms after each arrives: returns the
   * events whose delivery was ever seen written to wait for a claim (pending, unleased), once all ten succeeded.
   */
  const answerOneAtATime = async ({ rowsOf, publishCompleted, receiver, held }: Awaited<ReturnType<typeof twoSlotDispatcher>>) => {
    const jobIds = Array.from({ length: 10 }, () => newId("job"));
    for (const jobId of jobIds) await publishCompleted(jobId);
    const forClaim = new Set<string>();
    for (let answered = 0; answered < jobIds.length; answered += 1) {
      await receiver.waitFor(answered + 1);
      await sleep(150);
      for (const row of await rowsOf()) if (row.status === "pending" && row.lease_token === null) forClaim.add(row.job_id);
      held.shift()!.writeHead(200).end("ok");
    }
    await eventually(async () => (await rowsOf()).filter((row) => row.status === "succeeded").length === jobIds.length);
    return forClaim;
  };

  it("keeps an event waiting while slots keep coming free, however long it waits in all, and writes it leased", async () => {
    // The last events wait ~1.5 s in all, longer than DISPATCHER_INGEST_SLOT_WAIT_MS, but a slot comes free every
    // ~150 ms: a replica that is only slower than its events (a burst, a small CPU share) does not turn them into claims.
    const forClaim = await answerOneAtATime(await twoSlotDispatcher(1000, { slots: 1 }));
    expect([...forClaim]).toEqual([]);
  });

  it("writes an event for a claim once it has waited a quarter of DISPATCHER_ACK_WAIT_MS, slots coming free or not", async () => {
    const forClaim = await answerOneAtATime(await twoSlotDispatcher(600, { slots: 1, overrides: { DISPATCHER_ACK_WAIT_MS: "3200" } }));
    expect(forClaim.size).toBeGreaterThan(0);
  });

  it("gives a freed slot to a due retry before the events waiting for one", async () => {
    const { receiver, held, publishCompleted } = await twoSlotDispatcher(20_000, { slots: 1, overrides: { WEBHOOK_RETRY_SCHEDULE_MS: "300,300,300" } });
    const [failing, first, second] = [newId("job"), newId("job"), newId("job")];
    await publishCompleted(failing);
    await receiver.waitFor(1);
    await publishCompleted(first);
    await sleep(200);
    // The only slot comes free with a failure: the retry is due in 300 ms, so the waiting event takes the slot.
    held.shift()!.writeHead(500).end();
    await receiver.waitFor(2);
    expect(receiver.received[1]!.json.jobId).toBe(first);
    await publishCompleted(second);
    // The retry falls due while `first` holds the slot and `second` waits for it.
    await sleep(800);
    held.shift()!.writeHead(200).end("ok");
    await receiver.waitFor(3);
    expect(receiver.received[2]!.json.jobId).toBe(failing);
    held.shift()!.writeHead(200).end("ok");
    await receiver.waitFor(4);
    expect(receiver.received[3]!.json.jobId).toBe(second);
    held.shift()!.writeHead(200).end("ok");
  });

  it("on shutdown writes the events waiting for a slot at once, for another replica's claim", async () => {
    const { rowsOf, publishCompleted, fillSlots, stop } = await twoSlotDispatcher(20_000);
    await fillSlots();
    const waiting = newId("job");
    await publishCompleted(waiting);
    await sleep(300);
    expect((await rowsOf()).map((row) => row.job_id)).not.toContain(waiting);

    // The two attempts never end (600 s timeout, nobody answers): only closing admissions lets the consumer drain.
    await stop();
    expect((await rowsOf()).find((row) => row.job_id === waiting)).toMatchObject({ status: "pending", lease_token: null });
  }, 10_000);
});
