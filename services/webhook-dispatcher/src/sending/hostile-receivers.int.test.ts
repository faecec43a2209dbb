import { afterAll, beforeAll, describe, expect, it } from "vitest";
import pg from "pg";
import { createTestDatabase, testInfra, testNamespace } from "@renderbus/testing";
import { newId } from "@renderbus/ids";
import { isBlockedAddress } from "./address-guard.js";
import { connectPublisher, eventually, jobCompletedEvent, startFakeAuth, startReceiver, startTestDispatcher, testConfig } from "../testing/dispatcher-harness.js";
import type { DispatcherService } from "../service.js";
import { startHostileReceiver, type HostileBehaviour, type HostileReceiver } from "./hostile-receivers.fixture.js";

const SCHEDULE = [100, 300];
const TIMEOUT_MS = 600;

let fakeAuth: Awaited<ReturnType<typeof startFakeAuth>>;
let publisher: Awaited<ReturnType<typeof connectPublisher>>;
let dispatcher: DispatcherService;
let database: pg.Pool;
const stoppers: Array<{ stop(): Promise<void> }> = [];
// The loopback receivers count as public, as a real receiver does with the guard on: what they answer is recorded.
const receiverCountsAsPublic = (address: string) => address !== "127.0.0.1" && isBlockedAddress(address);

beforeAll(async () => {
  const { natsUrl } = testInfra();
  const databaseUrl = await createTestDatabase("dispatcherhostile");
  database = new pg.Pool({ connectionString: databaseUrl, max: 2 });
  const namespace = testNamespace("hostile");
  fakeAuth = await startFakeAuth();
  publisher = await connectPublisher(natsUrl, namespace);
  dispatcher = await startTestDispatcher(
    testConfig(
      { databaseUrl, natsUrl, namespace, authAddress: fakeAuth.address },
      { WEBHOOK_RETRY_SCHEDULE_MS: SCHEDULE.join(","), WEBHOOK_TIMEOUT_MS: String(TIMEOUT_MS), DISPATCHER_POLL_INTERVAL_MS: "100" },
    ),
    { addressPolicy: receiverCountsAsPublic },
  );
});

afterAll(async () => {
  await dispatcher?.stop();
  await publisher?.close();
  await fakeAuth?.stop();
  await Promise.all(stoppers.map((each) => each.stop()));
  await database?.end();
});

async function orgWith(url: string): Promise<string> {
  const orgId = newId("org");
  fakeAuth.setTarget({ orgId, plan: "pro", url, secret: "whsec_hostile" });
  return orgId;
}

const EXPECTED_ERRORS: Record<Exclude<HostileBehaviour, "huge-body" | "body-then-fin" | "slow-body" | "nul-body">, RegExp> = {
  reset: /ECONNRESET|socket hang up/,
  "never-read": /^timed out after 600 ms$/,
  garbage: /^HPE_\w+: the receiver did not answer with valid HTTP/,
  "huge-body-then-reset": /^HTTP 500$/,
  silent: /^timed out after 600 ms$/,
  "huge-headers": /^HPE_HEADER_OVERFLOW/,
  trickle: /^timed out after 600 ms$/,
};

describe("the dispatcher against hostile receivers", () => {
  it("records every attempt as failed with a clear error, retries on the schedule, ends each delivery failed (none left pending) and keeps delivering to a normal org", async () => {
    const hostile: Array<{ behaviour: HostileBehaviour; receiver: HostileReceiver; orgId: string }> = [];
    for (const behaviour of Object.keys(EXPECTED_ERRORS) as HostileBehaviour[]) {
      const receiver = await startHostileReceiver(behaviour);
      stoppers.push(receiver);
      hostile.push({ behaviour, receiver, orgId: await orgWith(receiver.url) });
    }
    const normal = await startReceiver();
    stoppers.push(normal);
    const normalOrg = await orgWith(normal.url);

    for (const { orgId } of hostile) await publisher.publish("job.completed", jobCompletedEvent(orgId));
    await publisher.publish("job.completed", jobCompletedEvent(normalOrg));

    await normal.waitFor(1, 10_000);
    const finalRows = await eventually(async () => {
      const { rows } = await database.query<{ org_id: string; id: string; status: string; attempts: number; next_attempt_at: string | null }>(
        "select org_id, id, status, attempts, next_attempt_at from dispatcher.deliveries where org_id = any($1)",
        [hostile.map((each) => each.orgId)],
      );
      return rows.length === hostile.length && rows.every((row) => row.status === "failed") ? rows : undefined;
    }, 30_000);

    for (const { behaviour, receiver, orgId } of hostile) {
      const row = finalRows.find((each) => each.org_id === orgId)!;
      expect({ behaviour, attempts: row.attempts, next: row.next_attempt_at }).toEqual({ behaviour, attempts: SCHEDULE.length + 1, next: null });
      const { rows: attempts } = await database.query<{ attempt: number; started_at: string; error: string | null; response_status: number | null }>(
        "select attempt, started_at, error, response_status from dispatcher.delivery_attempts where delivery_id = $1 order by attempt",
        [row.id],
      );
      expect(attempts.map((attempt) => attempt.attempt)).toEqual([1, 2, 3]);
      for (const attempt of attempts) expect({ behaviour, error: attempt.error }).toEqual({ behaviour, error: expect.stringMatching(EXPECTED_ERRORS[behaviour as keyof typeof EXPECTED_ERRORS]) });
      // Retried on the schedule: each retry no sooner than its delay after the previous attempt ended.
      for (let index = 1; index < attempts.length; index += 1) {
        expect(Number(attempts[index]!.started_at) - Number(attempts[index - 1]!.started_at)).toBeGreaterThanOrEqual(SCHEDULE[index - 1]!);
      }
      expect(receiver.connections).toBeGreaterThanOrEqual(3);
    }

    const { rows: pending } = await database.query("select id from dispatcher.deliveries where status not in ('succeeded', 'failed')");
    expect(pending).toEqual([]);
    const { rows: normalRows } = await database.query("select status from dispatcher.deliveries where org_id = $1", [normalOrg]);
    expect(normalRows).toEqual([{ status: "succeeded" }]);
  });

  it("records a 200 whose body holds a NUL byte (a binary body) as one succeeded attempt, sent once, its excerpt stored without the NUL", async () => {
    const receiver = await startHostileReceiver("nul-body");
    stoppers.push(receiver);
    const orgId = await orgWith(receiver.url);
    await publisher.publish("job.completed", jobCompletedEvent(orgId));

    // PostgreSQL refuses U+0000 in text: an excerpt stored as received failed the record, and the delivery stayed
    // pending, sent again as attempt 1 after every lease.
    const delivery = await eventually(async () => {
      const { rows } = await database.query<{ id: string; status: string; attempts: number }>("select id, status, attempts from dispatcher.deliveries where org_id = $1", [orgId]);
      return rows[0]?.status === "succeeded" ? rows[0] : undefined;
    }, 10_000);
    expect(delivery.attempts).toBe(1);
    const { rows: attempts } = await database.query<{ attempt: number; response_status: number; response_excerpt: string }>(
      "select attempt, response_status, response_excerpt from dispatcher.delivery_attempts where delivery_id = $1",
      [delivery.id],
    );
    expect(attempts).toEqual([{ attempt: 1, response_status: 200, response_excerpt: "ok\uFFFD" }]);
    expect(receiver.connections).toBe(1);
  });
});
