import { mkdtempSync, readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { api, createOrg, makeTestVideo, repoRoot, waitFor } from "../helpers.js";

const DISPATCHED_TIMEOUT_MS = 1_500;
const JOB_HOLD_MAX_MS = 12_000;
/** Longer than the dispatched timeout plus a hold's TTL: without holds the watchdog fails the job meanwhile. */
const SLOW_MS = 5_000;
/** Longer than holds may keep a job (a worker stuck on a download that never ends). */
const STUCK_MS = 60_000;

/** Serves one file after a delay (`/slow`: SLOW_MS, `/stuck`: STUCK_MS): an input on a slow link, or a large one. */
async function startSlowServer(file: string) {
  const body = readFileSync(file);
  const requests: string[] = [];
  const abandoned: string[] = [];
  const server: Server = createServer((request, response) => {
    const path = request.url ?? "/";
    requests.push(path);
    const timer = setTimeout(() => response.writeHead(200, { "content-type": "video/mp4", "content-length": body.length }).end(body), path === "/stuck" ? STUCK_MS : SLOW_MS);
    response.on("close", () => {
      if (!response.writableFinished) {
        clearTimeout(timer);
        abandoned.push(path);
      }
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const base = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
  return {
    url: (path: "/slow" | "/stuck") => `${base}${path}`,
    requests: () => requests,
    abandoned: () => abandoned,
    close: () => {
      server.closeAllConnections();
      return new Promise<void>((done) => server.close(() => done()));
    },
  };
}

/**
 * A worker that needs longer to download a job's inputs than DISPATCHED_TIMEOUT_MS holds the job (HoldJob every
 * second), so the watchdog leaves it to finish instead of failing a job that is being worked on.
 */
describe("a job whose inputs take longer to download than the dispatched timeout", () => {
  let system: RunningSystem;
  let slow: Awaited<ReturnType<typeof startSlowServer>>;

  beforeAll(async () => {
    const infra = testInfra();
    slow = await startSlowServer(join(await makeTestVideo(), "clip.mp4"));
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("longprep"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("longprep"),
      outputDir: mkdtempSync(join(tmpdir(), "rb-out-")),
      env: {
        MODE: "test",
        DISPATCHED_TIMEOUT_MS: String(DISPATCHED_TIMEOUT_MS),
        JOBS_WATCHDOG_INTERVAL_MS: "200",
        // Three of the worker's holds (one a second).
        JOB_HOLD_TTL_MS: "3000",
        JOB_HOLD_MAX_MS: String(JOB_HOLD_MAX_MS),
        // The download's own deadlines are longer than the test: only a hold's answer can stop it.
        INPUT_HEADERS_TIMEOUT_MS: "120000",
        INPUT_FETCH_TIMEOUT_MS: "120000",
        PLANS_JSON: JSON.stringify({ pro: { requestsPerMinute: 100000 } }),
      },
    });
  }, 180_000);

  afterAll(async () => {
    await system?.stop();
    await slow?.close();
  });

  const finished = (call: ReturnType<typeof api>, jobId: string) =>
    waitFor(async () => {
      const data = (await call("GET", `/jobs/${jobId}`)).body.data;
      return ["completed", "failed", "cancelled"].includes(data.status) ? data : undefined;
    }, { timeoutMs: 90_000, intervalMs: 250, what: `job ${jobId}` });

  it("completes it: the worker's holds keep the watchdog from failing it while the download is slow", async () => {
    const { key } = await createOrg(system.env, "pro", "Slow inputs");
    const call = api(system.gatewayUrl, key);
    const submitted = await call("POST", "/jobs", { type: "extract.metadata", inputs: { source: slow.url("/slow") } });
    expect(submitted.status).toBe(201);
    const job = await finished(call, submitted.body.data.id);
    expect({ status: job.status, error: job.error ?? null }).toEqual({ status: "completed", error: null });
    expect(job.result.metadata.durationMs).toBeGreaterThan(1_500);
    expect(slow.requests()).toEqual(["/slow"]);
  });

  it("fails it JOB_HOLD_MAX_MS past the dispatched timeout when the download never ends, and the worker stops downloading when its next hold hears so", async () => {
    const { key } = await createOrg(system.env, "pro", "Stuck inputs");
    const call = api(system.gatewayUrl, key);
    const submitted = await call("POST", "/jobs", { type: "extract.metadata", inputs: { source: slow.url("/stuck") } });
    expect(submitted.status).toBe(201);
    const job = await finished(call, submitted.body.data.id);
    expect(job).toMatchObject({ status: "failed", error: { code: "PROVIDER_ERROR" } });
    // No cancel event goes out for a job the watchdog failed: the hold's CONFLICT is what stops the worker.
    await waitFor(() => slow.abandoned().includes("/stuck"), { timeoutMs: 20_000, what: "the worker to abandon the download" });
  });
});
