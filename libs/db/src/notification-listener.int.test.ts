import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { createTestDatabase } from "@renderbus/testing";
import { startNotificationListener, type NotificationListener } from "./notification-listener.js";

const closers: (() => Promise<unknown>)[] = [];
afterAll(async () => {
  for (const close of closers.reverse()) await close().catch(() => undefined);
});

async function eventually(condition: () => boolean | Promise<boolean>, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error("condition not met in time");
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function setUp(channel: string) {
  const url = await createTestDatabase("listener");
  const admin = new pg.Client({ connectionString: url });
  await admin.connect();
  closers.push(() => admin.end());
  let notified = 0;
  const payloads: Array<string | undefined> = [];
  const onNotify = (payload?: string) => {
    notified += 1;
    payloads.push(payload);
  };
  const listener: NotificationListener = await startNotificationListener({ connectionString: url, channel, onNotify, retryMs: 50 });
  closers.push(() => listener.stop());
  /** Ends the listener's backend the way a database restart or an operator would. */
  const terminateListener = async () => {
    const { rows } = await admin.query<{ ended: boolean }>(
      "select pg_terminate_backend(pid) as ended from pg_stat_activity where datname = current_database() and query = $1",
      [`listen ${channel}`],
    );
    expect(rows.map((row) => row.ended)).toEqual([true]);
  };
  return { admin, listener, terminateListener, notified: () => notified, payloads };
}

describe("a LISTEN connection", () => {
  it("is listened on again after its connection is lost, and reports the gap as a notification", async () => {
    const { admin, listener, terminateListener, notified } = await setUp("rb_test_channel");
    expect(listener.listening).toBe(true);
    await admin.query("notify rb_test_channel");
    await eventually(() => notified() === 1);

    await terminateListener();
    // What was notified while it was down is lost: once it listens again, its owner is told to look for work.
    await eventually(() => listener.listening && notified() === 2);

    await admin.query("notify rb_test_channel");
    await eventually(() => notified() === 3);
  });

  it("hands each notification's payload over, and none for the gap after a lost connection", async () => {
    const { admin, terminateListener, notified, payloads } = await setUp("rb_test_payload");
    await admin.query("select pg_notify('rb_test_payload', 'org_1')");
    await admin.query("notify rb_test_payload");
    await eventually(() => notified() === 2);
    await terminateListener();
    await eventually(() => notified() === 3);
    // An empty NOTIFY has an empty payload; only the gap has none (anything may have been notified during it).
    expect(payloads).toEqual(["org_1", "", undefined]);
  });

  it("stops listening for good when stopped, without reconnecting", async () => {
    const { admin, listener, notified } = await setUp("rb_test_stop");
    await listener.stop();
    expect(listener.listening).toBe(false);
    await admin.query("notify rb_test_stop");
    await new Promise((resolve) => setTimeout(resolve, 300));
    expect(notified()).toBe(0);
    const { rows } = await admin.query("select 1 from pg_stat_activity where datname = current_database() and query = 'listen rb_test_stop'");
    expect(rows).toEqual([]);
  });
});
