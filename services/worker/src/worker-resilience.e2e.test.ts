import { execFile, spawn, type ChildProcess } from "node:child_process";
import { appendFileSync, mkdtempSync, statSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { createInterface } from "node:readline";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem, type ServiceName } from "@renderbus/testing";
import { api, createOrg, repoRoot, waitFor } from "../../../e2e/helpers.js";
import { TEST_CRASH_PARAMETER } from "./dispatch/test-crash-hook.js";
import { CRASHED_ONCE_MESSAGE, CRASHED_TWICE_MESSAGE } from "./dispatch/handle-dispatch.js";

/**
 * "Nothing a peer does can crash a service", for the worker, against the whole system (every service its own
 * process, the worker from source): the input server of the original report, and inputs that crash the worker.
 */

const run = promisify(execFile);
const TERMINAL = ["completed", "failed", "cancelled"];

/** python3 -m http.server on a free port, serving `dir`; resolves with its base URL once it listens. */
async function startPythonServer(dir: string): Promise<{ url: string; process: ChildProcess }> {
  const python = spawn("python3", ["-u", "-m", "http.server", "0", "--bind", "127.0.0.1", "--directory", dir], { stdio: ["ignore", "pipe", "pipe"] });
  const port = await new Promise<string>((resolve, reject) => {
    python.once("exit", (code) => reject(new Error(`python3 -m http.server exited with ${code}`)));
    createInterface({ input: python.stdout! }).on("line", (line) => {
      const match = /port (\d+)/.exec(line);
      if (match) resolve(match[1]!);
    });
  });
  return { url: `http://127.0.0.1:${port}`, process: python };
}

describe("the worker against hostile inputs, whole system", () => {
  let system: RunningSystem;
  let python: { url: string; process: ChildProcess };
  let call: ReturnType<typeof api>;
  let videoBytes = 0;
  const workerLines: string[] = [];
  /** Worker exits nobody asked for, e.g. `code 70` or `SIGKILL`; each is followed by a restart, like a supervisor. */
  const workerExits: string[] = [];

  beforeAll(async () => {
    const media = mkdtempSync(join(tmpdir(), "rb-resilience-media-"));
    // About 10 MB: nearly lossless 540p, cheap to make and to transcode down.
    await run("ffmpeg", [
      "-v", "error", "-y",
      "-f", "lavfi", "-i", "testsrc2=duration=10:size=960x540:rate=25",
      "-f", "lavfi", "-i", "sine=frequency=440:duration=10",
      "-c:v", "libx264", "-preset", "ultrafast", "-qp", "3", "-pix_fmt", "yuv420p", "-c:a", "aac", "-shortest", join(media, "big.mp4"),
    ]);
    videoBytes = statSync(join(media, "big.mp4")).size;
    python = await startPythonServer(media);
    const infra = testInfra();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("resilience"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("resilience"),
      outputDir: mkdtempSync(join(tmpdir(), "rb-resilience-out-")),
      env: {
        MODE: "test",
        // The inputs are on 127.0.0.1.
        ALLOW_PRIVATE_ADDRESSES: "true",
        WORKER_TEST_CRASH_HOOK: "true",
        // A crashed worker's message comes back after this long (heartbeats keep a live job's).
        WORKER_ACK_WAIT_MS: "2000",
        PLANS_JSON: JSON.stringify({ pro: { requestsPerMinute: 100000 } }),
      },
      onLine: (service: ServiceName, line: string) => {
        if (service === "worker") workerLines.push(line);
        // RB_E2E_LOG=<file> keeps every service's output for a failed run.
        if (process.env.RB_E2E_LOG) appendFileSync(process.env.RB_E2E_LOG, `${service} ${line}\n`);
      },
      onExit: (service: ServiceName, how: string) => {
        if (service !== "worker") return;
        workerExits.push(how);
        void system.start("worker");
      },
    });
    const { key } = await createOrg(system.env, "pro", "Resilience");
    call = api(system.gatewayUrl, key);
  }, 240_000);

  afterAll(async () => {
    await system?.stop();
    python?.process.kill();
  });

  const submit = async (source: string) => {
    const response = await call("POST", "/jobs", { type: "transcode", inputs: { source }, params: { width: 320, preset: "ultrafast" } });
    expect(response.status, JSON.stringify(response.body)).toBe(201);
    return response.body.data.id as string;
  };
  /** The worker's warnings and errors so far, for assertion messages. */
  const workerTrouble = () => workerLines.filter((line) => /"level":(40|50|60)/.test(line)).slice(-30).join("\n");
  const finished = async (jobId: string, timeoutMs = 120_000) => {
    let last: unknown;
    try {
      return await waitFor(async () => {
        const response = await call("GET", `/jobs/${jobId}`);
        last = response.body;
        return TERMINAL.includes(response.body?.data?.status) ? response.body.data : undefined;
      }, { timeoutMs, intervalMs: 250, what: `job ${jobId} to finish` });
    } catch (error) {
      throw new Error(`${(error as Error).message}; last answer ${JSON.stringify(last)}`, { cause: error });
    }
  };

  it("transcodes two jobs at once from python's http.server (~10 MB input) and the worker stays up", async () => {
    expect(videoBytes).toBeGreaterThan(8 * 1024 * 1024);
    const workerPid = system.pid("worker");
    const jobIds = await Promise.all([submit(`${python.url}/big.mp4`), submit(`${python.url}/big.mp4`)]);
    const jobs = await Promise.all(jobIds.map((jobId) => finished(jobId)));
    for (const job of jobs) {
      expect(job.status, JSON.stringify(job.error)).toBe("completed");
      expect(job.result.metadata.width).toBe(320);
    }
    expect(workerExits).toEqual([]);
    expect(system.pid("worker")).toBe(workerPid);
  }, 180_000);

  it("fails a job whose processing throws an uncaught exception at once, logged with its job id, and the restarted worker runs the next job", async () => {
    const jobId = await submit(`${python.url}/big.mp4?${TEST_CRASH_PARAMETER}=throw`);
    const job = await finished(jobId);
    expect(job.status).toBe("failed");
    expect(job.error).toEqual({ code: "PROVIDER_ERROR", message: CRASHED_ONCE_MESSAGE });
    const fatal = workerLines.map((line) => (line.startsWith("{") ? JSON.parse(line) : {})).find((entry) => entry.level === 60 || entry.level === "fatal");
    expect(fatal).toMatchObject({ jobId, msg: "uncaught error; the process exits" });
    await waitFor(() => (workerExits.length === 1 ? true : undefined), { what: "the worker to exit" });
    // runService's exit code for a fatal error (tsx passes it through), for the supervisor to restart it.
    expect(workerExits[0]).toBe("code 70");

    const next = await finished(await submit(`${python.url}/big.mp4`));
    expect(next.status, JSON.stringify(next.error)).toBe("completed");
  }, 180_000);

  it("fails a job that killed its worker twice (no chance to report: SIGKILL) instead of crash-looping, and later jobs complete", async () => {
    const exitsBefore = workerExits.length;
    const jobId = await submit(`${python.url}/big.mp4?${TEST_CRASH_PARAMETER}=sigkill`);
    const job = await finished(jobId, 150_000);
    expect(job.status).toBe("failed");
    expect(job.error).toEqual({ code: "PROVIDER_ERROR", message: CRASHED_TWICE_MESSAGE });
    expect(workerExits.slice(exitsBefore), workerTrouble()).toEqual(["SIGKILL", "SIGKILL"].map((signal) => expect.stringMatching(new RegExp(`${signal}|code 137`))));

    const later = await Promise.all([submit(`${python.url}/big.mp4`), submit(`${python.url}/big.mp4`)]);
    for (const laterJob of await Promise.all(later.map((id) => finished(id)))) expect(laterJob.status, JSON.stringify(laterJob.error)).toBe("completed");
    expect(workerExits).toHaveLength(exitsBefore + 2);
  }, 240_000);
});
