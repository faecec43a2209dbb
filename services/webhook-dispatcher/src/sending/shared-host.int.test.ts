import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "@renderbus/ids";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import type { DispatcherService } from "../service.js";
import { connectPublisher, jobCompletedEvent, startFakeAuth, startReceiver, startTestDispatcher, testConfig } from "../testing/dispatcher-harness.js";
import { CONNECTIONS_PER_HOST } from "./post-webhook.js";

const TIMEOUT_MS = 3000;
const ORG_MAX_IN_FLIGHT = CONNECTIONS_PER_HOST / 2;

let fakeAuth: Awaited<ReturnType<typeof startFakeAuth>>;
let publisher: Awaited<ReturnType<typeof connectPublisher>>;
let dispatcher: DispatcherService;
let receiver: Awaited<ReturnType<typeof startReceiver>> | undefined;
let client: pg.Client;

beforeAll(async () => {
  const { natsUrl } = testInfra();
  const databaseUrl = await createTestDatabase("dispatchershared");
  client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  const namespace = testNamespace("shared");
  fakeAuth = await startFakeAuth();
  publisher = await connectPublisher(natsUrl, namespace);
  dispatcher = await startTestDispatcher(
    testConfig(
      { databaseUrl, natsUrl, namespace, authAddress: fakeAuth.address },
      { WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS), DISPATCHER_ORG_MAX_IN_FLIGHT: String(ORG_MAX_IN_FLIGHT), WEBHOOK_RETRY_SCHEDULE_MS: "60000" },
    ),
  );
});

afterAll(async () => {
  await dispatcher?.stop();
  await publisher?.close();
  await fakeAuth?.stop();
  await receiver?.stop();
  await client?.end();
});

describe("orgs whose endpoints share a host", () => {
  it("charges no attempt for the time it waited behind other orgs' slow answers: all are sent once, on their first attempt", async () => {
    const fastJobs = new Set<string>();
    const slowAnswerMs = 0.7 * TIMEOUT_MS;
    // One host (a receiving SaaS, say) for five orgs: four of them have endpoints there that answer slowly, within
    // the timeout; each of those holds its ORG_MAX_IN_FLIGHT attempts, twice the host's connections in all.
    receiver = await startReceiver((request, response) => {
      if (fastJobs.has((request.json as { jobId?: string }).jobId ?? "")) response.writeHead(200).end("ok");
      else setTimeout(() => response.writeHead(200).end("ok"), slowAnswerMs);
    });
    const slowOrgs = Array.from({ length: 4 }, () => newId("org"));
    const fastOrg = newId("org");
    for (const orgId of [...slowOrgs, fastOrg]) fakeAuth.setTarget({ orgId, plan: "pro", url: receiver.url, secret: "s" });

    const slowEvents = slowOrgs.flatMap((orgId) => Array.from({ length: ORG_MAX_IN_FLIGHT }, () => jobCompletedEvent(orgId)));
    await Promise.all(slowEvents.map((event) => publisher.publish("job.completed", event)));
    await receiver.waitFor(CONNECTIONS_PER_HOST);
    const fastEvents = Array.from({ length: 20 }, () => jobCompletedEvent(fastOrg));
    for (const event of fastEvents) fastJobs.add(event.jobId);
    await Promise.all(fastEvents.map((event) => publisher.publish("job.completed", event)));

    // The second half of the slow attempts waits one slow answer for a connection, the fast org's two: longer than
    // the timeout. Each attempt's timeout counts from its connection, so none fails for the time it queued (to be
    // retried a minute later, WEBHOOK_RETRY_SCHEDULE_MS) and the host sees every delivery once, as attempt 1.
    const all = slowEvents.length + fastEvents.length;
    await receiver.waitFor(all, 4 * TIMEOUT_MS + 10_000);
    await new Promise((resolve) => setTimeout(resolve, slowAnswerMs + 500));
    expect(receiver.received).toHaveLength(all);
    expect(receiver.received.map((request) => request.headers["x-renderbus-attempt"])).toEqual(receiver.received.map(() => "1"));
    expect(new Set(receiver.received.map((request) => (request.json as { jobId: string }).jobId)).size).toBe(all);
    const { rows } = await client.query<{ error: string | null }>("select error from dispatcher.delivery_attempts");
    expect(rows.filter((attempt) => attempt.error !== null)).toEqual([]);
    expect(rows).toHaveLength(all);
  });
});
