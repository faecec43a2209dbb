import type { ChildProcess } from "node:child_process";
import pg from "pg";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { newId } from "@renderbus/ids";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import type { DispatcherService } from "./service.js";
import { connectPublisher, eventually, jobCompletedEvent, startFakeAuth, startReceiver, startTestDispatcher, testConfig, spawnDispatcher } from "./testing/dispatcher-harness.js";

const EVENTS = 1000;
/** Attempts one replica has in flight at most (DISPATCHER_CONCURRENCY default): the only ones a crash may repeat. */
const IN_FLIGHT_PER_REPLICA = 64;

let fakeAuth: Awaited<ReturnType<typeof startFakeAuth>>;
let publisher: Awaited<ReturnType<typeof connectPublisher>>;
let receiver: Awaited<ReturnType<typeof startReceiver>>;
let inProcess: DispatcherService;
let databaseUrl: string;
let env: Record<string, string>;
const children: ChildProcess[] = [];

function startChild(): ChildProcess {
  const child = spawnDispatcher(env);
  children.push(child);
  return child;
}

beforeAll(async () => {
  const { natsUrl } = testInfra();
  databaseUrl = await createTestDatabase("dispatchercrash");
  const namespace = testNamespace("crash");
  fakeAuth = await startFakeAuth();
  receiver = await startReceiver();
  publisher = await connectPublisher(natsUrl, namespace);
  env = {
    MODE: "test",
    LOG_LEVEL: "warn",
    DATABASE_URL: databaseUrl,
    NATS_URL: natsUrl,
    NATS_NAMESPACE: namespace,
    AUTH_GRPC_ADDRESS: fakeAuth.address,
    WEBHOOKS_GRPC_PORT: "0",
    WEBHOOK_TIMEOUT_MS: "2000",
    DISPATCHER_LEASE_GRACE_MS: "1000",
    DISPATCHER_ACK_WAIT_MS: "3000",
    DISPATCHER_POLL_INTERVAL_MS: "200",
    // The receiver is on 127.0.0.1: the replicas started as child processes need the guard lifted as the harness does.
    ALLOW_PRIVATE_ADDRESSES: "true",
  };
  inProcess = await startTestDispatcher(testConfig({ databaseUrl, natsUrl, namespace, authAddress: fakeAuth.address }, env));
});

afterAll(async () => {
  for (const child of children) if (child.exitCode === null) child.kill("SIGKILL");
  await inProcess?.stop();
  await publisher?.close();
  await fakeAuth?.stop();
  await receiver?.stop();
});

describe("crash safety", () => {
  it("loses no delivery when a replica is killed with SIGKILL mid-stream and restarted", async () => {
    const orgId = newId("org");
    fakeAuth.setTarget({ orgId, plan: "scale", url: receiver.url, secret: "s" });
    const child = startChild();
    // Let the child join the durable consumer before the stream starts.
    await new Promise((resolve) => setTimeout(resolve, 1500));
    const jobIds = Array.from({ length: EVENTS }, () => newId("job"));
    const publishing = (async () => {
      for (let index = 0; index < jobIds.length; index += 50) {
        await Promise.all(jobIds.slice(index, index + 50).map((jobId) => publisher.publish("job.completed", jobCompletedEvent(orgId, jobId))));
      }
    })();
    await receiver.waitFor(EVENTS / 4, 30_000);
    child.kill("SIGKILL");
    await publishing;
    startChild();

    const client = new pg.Client({ connectionString: databaseUrl });
    await client.connect();
    try {
      await eventually(async () => {
        const { rows } = await client.query("select count(*)::int as n from dispatcher.deliveries where status = 'succeeded'");
        return rows[0].n === EVENTS || undefined;
      }, 60_000);
      const { rows } = await client.query("select count(*)::int as n, count(distinct job_id)::int as jobs from dispatcher.deliveries");
      expect(rows[0]).toEqual({ n: EVENTS, jobs: EVENTS });
    } finally {
      await client.end();
    }
    const receivedJobs = new Set(receiver.received.map((request) => request.json.jobId));
    expect(receivedJobs.size).toBe(EVENTS);
    // Duplicates are attempts the killed replica had in flight (sent, not yet recorded); nothing else repeats.
    expect(receiver.received.length - EVENTS).toBeLessThanOrEqual(IN_FLIGHT_PER_REPLICA);
  }, 120_000);
});
