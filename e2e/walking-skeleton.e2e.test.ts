import { createHmac } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { api, createOrg, admin, makeTestVideo, startFileServer, startReceiver, waitFor, repoRoot } from "./helpers.js";

describe("walking skeleton: a job crosses every service", () => {
  let system: RunningSystem;
  let media: Awaited<ReturnType<typeof startFileServer>>;
  let receiver: Awaited<ReturnType<typeof startReceiver>>;
  const lines: string[] = [];

  beforeAll(async () => {
    const infra = testInfra();
    media = await startFileServer(await makeTestVideo());
    receiver = await startReceiver();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("skeleton"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("skeleton"),
      env: { MODE: "test", LOG_LEVEL: "info", WEBHOOK_RETRY_SCHEDULE_MS: "200,400,800" },
      onLine: (service, line) => lines.push(`${service} ${line}`),
    });
  }, 120_000);

  afterAll(async () => {
    await system?.stop();
    await media?.close();
    await receiver?.close();
  });

  it("runs extract.metadata with ffprobe and POSTs one job.completed signed as docs/webhooks.md says", async () => {
    const { orgId, key } = await createOrg(system.env, "starter", "Skeleton");
    const secret = "whsec_skeleton_test_secret";
    await admin(system.env, "org:webhook", "--org", orgId, "--url", receiver.url, "--secret", secret);
    const call = api(system.gatewayUrl, key);

    const submitted = await call("POST", "/jobs", { type: "extract.metadata", inputs: { source: media.url("clip.mp4") } });
    expect(submitted.status).toBe(201);
    const jobId: string = submitted.body.data.id;
    expect(jobId).toMatch(/^job_/);

    const completed = await waitFor(
      () => receiver.received.find((hook) => hook.headers["x-renderbus-event"] === "job.completed"),
      { timeoutMs: 45_000, what: "the job.completed webhook" },
    );
    const expected = `sha256=${createHmac("sha256", secret).update(completed.rawBody).digest("hex")}`;
    expect(completed.headers["x-renderbus-signature"]).toBe(expected);
    expect(completed.headers["x-renderbus-delivery"]).toMatch(/^del_/);
    expect(completed.headers["x-renderbus-attempt"]).toBe("1");
    expect(completed.headers["x-renderbus-timestamp"]).toBe(completed.headers["webhook-timestamp"]);
    expect(Math.abs(Number(completed.headers["x-renderbus-timestamp"]) - Date.now() / 1000)).toBeLessThan(300);
    expect(completed.headers["content-type"]).toMatch(/^application\/json/);
    const payload = JSON.parse(completed.rawBody.toString("utf8"));
    expect(payload).toMatchObject({ event: "job.completed", jobId, cost: { credits: expect.any(Number), breakdown: expect.any(String) } });
    expect(payload.result.url).toMatch(/^http/);
    expect(payload.result.metadata.durationMs).toBeGreaterThan(1900);
    expect(payload.timing.completedAt).toBeGreaterThanOrEqual(payload.timing.startedAt);
    expect(receiver.received.filter((hook) => hook.headers["x-renderbus-event"] === "job.completed")).toHaveLength(1);

    const fetched = await call("GET", `/jobs/${jobId}`);
    expect(fetched.status).toBe(200);
    expect(fetched.body.data).toMatchObject({ id: jobId, orgId, status: "completed", type: "extract.metadata" });
    expect(fetched.body.data.result.url).toBe(payload.result.url);

    const output = await fetch(payload.result.url);
    expect(output.status).toBe(200);
    const summary = JSON.parse(await output.text());
    expect(JSON.stringify(summary)).toContain("h264");
  });
});
