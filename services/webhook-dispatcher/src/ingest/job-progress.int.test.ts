import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDatabase, type Database } from "@renderbus/db";
import { newId } from "@renderbus/ids";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import { verifySignature } from "@renderbus/webhook-signing";
import type { DispatcherService } from "../service.js";
import { DISPATCHER_SCHEMA, type DispatcherTables } from "../database.js";
import { connectPublisher, eventually, sleep, startFakeAuth, startReceiver, startTestDispatcher, testConfig, webhooksClient, type ReceivedRequest } from "../testing/dispatcher-harness.js";

let fakeAuth: Awaited<ReturnType<typeof startFakeAuth>>;
let publisher: Awaited<ReturnType<typeof connectPublisher>>;
const replicas: DispatcherService[] = [];
let client: ReturnType<typeof webhooksClient>;
let database: Database<DispatcherTables>;
const receivers: { stop(): Promise<void> }[] = [];

const as = (orgId: string) => ({ auth: { orgId, userId: "usr_test", plan: "pro", role: "admin" } });
const INTERVAL_MS = 5000;

async function receiver() {
  const started = await startReceiver();
  receivers.push(started);
  return started;
}

beforeAll(async () => {
  const { natsUrl } = testInfra();
  const databaseUrl = await createTestDatabase("dispatcherprogress");
  const namespace = testNamespace("progress");
  fakeAuth = await startFakeAuth();
  publisher = await connectPublisher(natsUrl, namespace);
  // Two replicas on one database and one queue group: the throttle must hold across them.
  for (let index = 0; index < 2; index += 1) {
    replicas.push(await startTestDispatcher(testConfig({ databaseUrl, natsUrl, namespace, authAddress: fakeAuth.address }, { WEBHOOK_TIMEOUT_MS: "5000" })));
  }
  client = webhooksClient(replicas[0]!.grpcPort);
  database = createDatabase<DispatcherTables>({ url: databaseUrl, schema: DISPATCHER_SCHEMA, maxConnections: 2 });
});

afterAll(async () => {
  await database?.close();
  client?.close();
  for (const replica of replicas) await replica.stop();
  await publisher?.close();
  await fakeAuth?.stop();
  await Promise.all(receivers.map((started) => started.stop()));
});

describe("job.progress webhooks", () => {
  it("go only to endpoints naming job.progress, at most one per job every 5 s across replicas, signed", async () => {
    const defaultReceiver = await receiver();
    const orgId = newId("org");
    fakeAuth.setTarget({ orgId, plan: "pro", url: defaultReceiver.url, secret: "default-secret" });
    const progressOnly = await receiver();
    const everything = await receiver();
    const completedOnly = await receiver();
    const disabled = await receiver();
    const a = await client.createEndpoint({ url: progressOnly.url, events: ["job.progress"] }, as(orgId));
    const b = await client.createEndpoint({ url: everything.url, events: ["*", "job.progress"] }, as(orgId));
    await client.createEndpoint({ url: completedOnly.url, events: ["*"] }, as(orgId));
    await client.createEndpoint({ url: disabled.url, events: ["job.progress"], enabled: false }, as(orgId));
    // Another org's endpoint naming job.progress must not see this org's progress.
    const otherOrg = newId("org");
    const otherReceiver = await receiver();
    fakeAuth.setTarget({ orgId: otherOrg, plan: "pro" });
    await client.createEndpoint({ url: otherReceiver.url, events: ["job.progress"] }, as(otherOrg));

    // Two jobs report every 100 ms (5x the worker's rate) for 11 s, plus hostile messages that must be ignored.
    const jobs = [newId("job"), newId("job")];
    const startedAt = Date.now();
    // When the worker says the job was created and started (from StartJob): carried into each webhook.
    const TIMING = { createdAt: startedAt - 2000, startedAt: startedAt - 1000 };
    let tick = 0;
    while (Date.now() - startedAt < 11_000) {
      tick += 1;
      for (const jobId of jobs) {
        publisher.bus.notify(`jobs.progress.${orgId}.${jobId}`, { orgId, jobId, percent: Math.min(99, tick / 2), etaMs: 60_000 - tick * 100, updatedAt: Date.now(), timing: TIMING });
      }
      // A body naming another job than its subject, and an out-of-range reading: neither is believed.
      publisher.bus.notify(`jobs.progress.${orgId}.${jobs[0]}`, { orgId, jobId: newId("job"), percent: 10, etaMs: 1, updatedAt: Date.now() });
      publisher.bus.notify(`jobs.progress.${orgId}.${jobs[0]}`, { orgId, jobId: jobs[0], percent: 500, etaMs: 1, updatedAt: Date.now() });
      await sleep(100);
    }
    const publishedFor = Date.now() - startedAt;
    // Both replicas took part (the queue group shares the readings).
    expect(replicas.every((replica) => replica.progress.handled > 0)).toBe(true);

    const rows = await eventually(async () => {
      const found = await database.db.selectFrom("deliveries").selectAll().where("org_id", "=", orgId).where("event", "=", "job.progress").execute();
      return found.length > 0 && found.every((row) => row.status === "succeeded") ? found : undefined;
    }, 30_000);
    // Let any straggler land before counting what the receivers got.
    await sleep(1000);

    const allowed = Math.floor(publishedFor / INTERVAL_MS) + 1;
    for (const endpointId of [a.endpoint!.id, b.endpoint!.id]) {
      for (const jobId of jobs) {
        const mine = rows.filter((row) => row.endpoint_id === endpointId && row.job_id === jobId);
        expect(mine.length, `${endpointId} ${jobId}`).toBeGreaterThanOrEqual(1);
        expect(mine.length, `${endpointId} ${jobId}`).toBeLessThanOrEqual(allowed);
        // The throttle's times (PostgreSQL's clock, in the source event id) are at least 5 s apart.
        const times = mine.map((row) => Number(row.source_event_id!.split(":").at(-1))).sort((x, y) => x - y);
        for (let index = 1; index < times.length; index += 1) expect(times[index]! - times[index - 1]!).toBeGreaterThanOrEqual(INTERVAL_MS);
      }
    }
    expect(rows.every((row) => row.endpoint_id === a.endpoint!.id || row.endpoint_id === b.endpoint!.id)).toBe(true);

    const progressOf = (requests: ReceivedRequest[]) => requests.filter((request) => request.headers["x-renderbus-event"] === "job.progress");
    for (const got of [progressOnly.received, everything.received]) {
      const progress = progressOf(got);
      expect(progress.length).toBeGreaterThanOrEqual(2);
      for (const jobId of jobs) expect(progress.filter((request) => request.json.jobId === jobId).length).toBeLessThanOrEqual(allowed);
      for (const request of progress) {
        expect(Object.keys(request.json)).toEqual(["event", "jobId", "orgId", "progress", "timing"]);
        expect(request.json).toMatchObject({ event: "job.progress", orgId, progress: { percent: expect.any(Number), etaMs: expect.any(Number), updatedAt: expect.any(Number) }, timing: TIMING });
        expect(jobs).toContain(request.json.jobId);
        expect(request.json.progress.percent).toBeLessThanOrEqual(100);
      }
    }
    // The org's delivery log lists them under their event name.
    const listed = await client.listDeliveries({ limit: 100, event: "job.progress", jobId: jobs[0] }, as(orgId));
    expect(listed.deliveries.length).toBe(rows.filter((row) => row.job_id === jobs[0]).length);
    // Signed with the endpoint's own secret, like every delivery.
    const [first] = progressOf(progressOnly.received);
    expect(verifySignature(first!.rawBody, String(first!.headers["x-renderbus-signature"]), a.secret)).toBe(true);
    // "*" does not cover job.progress; a disabled endpoint and another org's endpoint get nothing.
    expect(progressOf(defaultReceiver.received)).toEqual([]);
    expect(progressOf(completedOnly.received)).toEqual([]);
    expect(disabled.received).toEqual([]);
    expect(otherReceiver.received).toEqual([]);
  }, 90_000);
});
