import { execFile } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { verifySignature } from "@renderbus/webhook-signing";
import { api, createOrg, repoRoot, startFileServer, startReceiver, waitFor, type ReceivedWebhook } from "./helpers.js";

const run = promisify(execFile);
const eventOf = (request: ReceivedWebhook) => request.headers["x-renderbus-event"];
const bodyOf = (request: ReceivedWebhook) => JSON.parse(request.rawBody.toString("utf8")) as Record<string, any>;

describe("job.progress webhooks of a real transcode (docs/webhooks.md, Progress events)", () => {
  let system: RunningSystem;
  let media: Awaited<ReturnType<typeof startFileServer>>;
  const receivers: Array<{ close(): Promise<void> }> = [];

  beforeAll(async () => {
    const infra = testInfra();
    const dir = mkdtempSync(join(tmpdir(), "rb-progresshook-media-"));
    // Long enough to encode for well over 5 s with the "slow" preset, even on an idle machine (20 s of it: ~10 s of
    // wall time on 2 idle cores, two throttle windows), and no longer: the transcode is most of this file's time.
    await run("ffmpeg", [
      "-v", "error", "-y", "-f", "lavfi", "-i", "testsrc2=duration=20:size=960x540:rate=30", "-f", "lavfi", "-i", "sine=frequency=440:duration=20",
      "-c:v", "libx264", "-preset", "ultrafast", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", join(dir, "clip.mp4"),
    ]);
    media = await startFileServer(dir);
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("progresshooke2e"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("progresshooke2e"),
      outputDir: mkdtempSync(join(tmpdir(), "rb-out-")),
      env: { MODE: "test", PLANS_JSON: JSON.stringify({ pro: { requestsPerMinute: 100000 } }), IP_REQUESTS_PER_MINUTE: "1000000" },
    });
  }, 180_000);

  afterAll(async () => {
    await system?.stop();
    await media?.close();
    await Promise.all(receivers.map((receiver) => receiver.close()));
  });

  it("an endpoint naming job.progress gets signed readings at most every 5 s; \"*\" gets none", async () => {
    const { orgId, key } = await createOrg(system.env, "pro", "Progress hooks");
    const call = api(system.gatewayUrl, key);
    const everything = await startReceiver();
    const progressOnly = await startReceiver();
    receivers.push(everything, progressOnly);
    expect((await call("PATCH", `/orgs/${orgId}`, { webhookUrl: everything.url, webhookSecret: "progress-seed-secret" })).status).toBe(200);
    const created = await call("POST", "/webhooks/endpoints", { url: progressOnly.url, events: ["job.progress"], description: "progress bar" });
    expect(created.status).toBe(201);
    expect(created.body.data.events).toEqual(["job.progress"]);
    const secret: string = created.body.data.secret;

    const submitted = await call("POST", "/jobs", { type: "transcode", inputs: { source: media.url("clip.mp4") }, params: { preset: "slow", crf: 20 } });
    expect(submitted.status).toBe(201);
    const jobId = submitted.body.data.id as string;
    const job = await waitFor(
      async () => {
        const { body } = await call("GET", `/jobs/${jobId}`);
        return ["completed", "failed", "cancelled"].includes(body.data.status) ? body.data : undefined;
      },
      { timeoutMs: 600_000, intervalMs: 500, what: "the transcode to finish" },
    );
    expect(job.status).toBe("completed");
    await waitFor(() => (everything.received.some((request) => eventOf(request) === "job.completed") ? true : undefined), { timeoutMs: 60_000, what: "job.completed" });

    // Every progress delivery created is sent (one created just before completion may still be on its way).
    const listed = await waitFor(
      async () => {
        const { status, body } = await call("GET", `/webhooks/deliveries?event=job.progress&jobId=${jobId}&limit=100`);
        expect(status).toBe(200);
        const deliveries = body.data as Array<{ endpointId: string; status: string }>;
        return deliveries.length > 0 && deliveries.every((delivery) => delivery.status === "succeeded") && progressOnly.received.length >= deliveries.length ? deliveries : undefined;
      },
      { timeoutMs: 60_000, what: "the progress deliveries to be sent" },
    );
    const progress = progressOnly.received.filter((request) => eventOf(request) === "job.progress");
    expect(progress.length).toBe(listed.length);
    // Only what it named: no job.running or job.completed.
    expect(progressOnly.received.every((request) => eventOf(request) === "job.progress")).toBe(true);
    for (const request of progress) {
      expect(verifySignature(request.rawBody, String(request.headers["x-renderbus-signature"]), secret)).toBe(true);
      const body = bodyOf(request);
      expect(body).toMatchObject({ event: "job.progress", jobId, orgId, timing: { createdAt: job.timing.createdAt, startedAt: job.timing.startedAt } });
      expect(body.progress.updatedAt).toBeGreaterThan(0);
      expect(body.progress.percent === null || (body.progress.percent >= 0 && body.progress.percent <= 100)).toBe(true);
    }
    // At most one per 5 s of running (plus the first), whatever the worker's 2 readings a second.
    const ranFor = job.timing.completedAt - job.timing.startedAt;
    expect(listed.length).toBeLessThanOrEqual(Math.floor(ranFor / 5000) + 2);
    expect(listed.every((delivery) => delivery.endpointId === created.body.data.id)).toBe(true);
    // "*" does not include it, and the job record lists only its lifecycle deliveries.
    expect(everything.received.filter((request) => eventOf(request) === "job.progress")).toEqual([]);
    expect(job.webhookDeliveries.every((delivery: { event: string }) => delivery.event !== "job.progress")).toBe(true);
  }, 900_000);
});
