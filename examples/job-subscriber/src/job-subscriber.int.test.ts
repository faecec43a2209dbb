import { spawn } from "node:child_process";
import { join, resolve } from "node:path";
import { createInterface } from "node:readline";
import { afterAll, describe, expect, it } from "vitest";
import { Bus, devNatsPassword, splitNatsUrl, STREAMS } from "@renderbus/bus";
import type { jobEvents } from "@renderbus/contracts";
import { testInfra, testNamespace } from "@renderbus/testing";
import { startJobSubscriber, type ReceivedJobEvent } from "./job-subscriber.js";

const repoRoot = resolve(import.meta.dirname, "..", "..", "..");

/** Publishes a job event the way the jobs service's outbox relay does: subject, msg id = event id, headers. */
async function publishJobEvent(bus: Bus, eventId: string, event: jobEvents.JobCompleted) {
  await bus.publish("jobs.events.job.completed", event, { msgId: eventId, headers: { "Rb-Event-Type": "job.completed", "Rb-Org-Id": event.orgId } });
}

const completed = (jobId: string): jobEvents.JobCompleted => ({
  jobId,
  orgId: "org_subscriber",
  result: { url: "http://127.0.0.1:3000/outputs/x.png", metadata: { width: 64, height: 64, fileSize: 812 }, outputKey: "x.png", contentType: "image/png" },
  cost: { credits: 1, breakdown: "1 image" },
  timing: { createdAt: 1, startedAt: 2, completedAt: 3 },
});

/**
 * The script's environment: its own read-only NATS user (`job-subscriber`) when the test server has users (its URL
 * carries the harness's superuser), else the URL as given.
 */
function asSubscriberUser(natsUrl: string): Record<string, string> {
  const { url, credentials } = splitNatsUrl(natsUrl);
  return credentials ? { NATS_URL: url, NATS_USER: "job-subscriber", NATS_PASSWORD: devNatsPassword("job-subscriber") } : { NATS_URL: natsUrl };
}

describe("the example job subscriber", () => {
  const buses: Bus[] = [];
  // Each test has its own namespace: its own stream, so one test's events never reach the other's subscriber.
  const publisher = async (namespace: string) => {
    const bus = await Bus.connect({ url: testInfra().natsUrl, name: "publisher", namespace });
    await bus.ensureStreams([STREAMS.jobEvents]);
    buses.push(bus);
    return bus;
  };

  afterAll(async () => {
    for (const bus of buses) await bus.close();
  });

  it("prints a job event published on jobs.events.> (the script, run as a process)", async () => {
    const namespace = testNamespace("jobsubscript");
    const bus = await publisher(namespace);
    const child = spawn(join(repoRoot, "node_modules", ".bin", "tsx"), ["examples/job-subscriber/src/main.ts"], {
      cwd: repoRoot,
      env: { ...process.env, ...asSubscriberUser(testInfra().natsUrl), NATS_NAMESPACE: namespace, SUBSCRIBER_DURABLE: "example-script", SUBSCRIBER_FROM: "all" },
      stdio: ["ignore", "pipe", "inherit"],
    });
    try {
      const lines: string[] = [];
      createInterface({ input: child.stdout! }).on("line", (line) => lines.push(line));
      await publishJobEvent(bus, "evt_script_1", completed("job_script_1"));
      const deadline = Date.now() + 60_000;
      while (!lines.some((line) => line.includes("job_script_1")) && Date.now() < deadline) await new Promise((done) => setTimeout(done, 100));
      expect(lines.find((line) => line.includes("job_script_1"))).toMatch(/^job\.completed\s+job_script_1\s+org_subscriber\s+1 credits/);
    } finally {
      child.kill("SIGTERM");
    }
  });

  it("resumes its durable consumer after a restart and receives each event once per event id", async () => {
    const namespace = testNamespace("jobsubdurable");
    const bus = await publisher(namespace);
    const received: ReceivedJobEvent[] = [];
    const options = { natsUrl: testInfra().natsUrl, namespace, durable: "example-durable", onEvent: (event: ReceivedJobEvent) => void received.push(event) };
    const first = await startJobSubscriber(options);
    await publishJobEvent(bus, "evt_durable_1", completed("job_durable_1"));
    await waitUntil(() => received.length === 1);
    await first.stop();

    // Published while the subscriber is down, and published twice: JetStream drops the repeat (same Nats-Msg-Id).
    await publishJobEvent(bus, "evt_durable_2", completed("job_durable_2"));
    await publishJobEvent(bus, "evt_durable_2", completed("job_durable_2"));
    const second = await startJobSubscriber(options);
    await waitUntil(() => received.length >= 2);
    await new Promise((done) => setTimeout(done, 500));
    await second.stop();
    expect(received.map((event) => [event.event, event.eventId, event.jobId])).toEqual([
      ["job.completed", "evt_durable_1", "job_durable_1"],
      ["job.completed", "evt_durable_2", "job_durable_2"],
    ]);
  });
});

async function waitUntil(condition: () => boolean, timeoutMs = 60_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error("timed out");
    await new Promise((done) => setTimeout(done, 50));
  }
}
