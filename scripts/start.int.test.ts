/**
 * `npm start` for real, from a copy of this checkout inside a mode-700 folder (as /root is), with no PostgreSQL,
 * NATS or Redis where it looks: as root it must start its own servers with their data where the postgres OS user
 * can reach it, serve /readyz, bring back a service killed with SIGKILL, leave nothing running after Ctrl-C and find
 * its data again on the next start; as an ordinary user (nobody) in that user's private home, start with the data
 * in the checkout. Root only (it creates and switches users' files); about 2.5 minutes.
 */
import { execFile, spawn, type ChildProcess } from "node:child_process";
import { existsSync, readFileSync, writeFileSync } from "node:fs";
import { chmod, mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { promisify, stripVTControlCharacters } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { api, makeTestVideo, startFileServer, waitFor } from "../e2e/helpers.js";
import { copyCheckout, withoutTestRunVariables } from "../e2e/checkout-copy.js";
import { getFreePort } from "../libs/testing/src/free-port.js";
import { isProcessAlive } from "../libs/testing/src/local-process.js";
import { keptLogPath } from "../libs/testing/src/run-tmpdir.js";

const run = promisify(execFile);
const isRoot = process.getuid?.() === 0;

/** Everything `npm start` printed so far, colours removed. */
let output = "";
let npmStart: ChildProcess | undefined;
let privateParent: string;
let checkout: string;
let gatewayUrl: string;

function lineMatching(pattern: RegExp): RegExpExecArray | undefined {
  return pattern.exec(output) ?? undefined;
}

/** Polls `${gatewayUrl}/readyz` until it answers `status`. */
async function readyzAnswers(status: number, timeoutMs: number): Promise<void> {
  await waitFor(async () => (await fetch(`${gatewayUrl}/readyz`).then((response) => response.status, () => 0)) === status || undefined, {
    timeoutMs,
    intervalMs: 50,
    what: `/readyz answering ${status}`,
  });
}

let startEnv: NodeJS.ProcessEnv;

/** Runs `npm start` in the copy and waits for its banner; returns where its output begins in `output`. */
async function runNpmStart(runAs?: { uid: number; gid: number }): Promise<number> {
  const from = output.length;
  // Its own process group, as in a terminal: Ctrl-C reaches npm and everything it started.
  const child = spawn("npm", ["start"], { cwd: checkout, env: startEnv, detached: true, stdio: ["ignore", "pipe", "pipe"], ...runAs });
  npmStart = child;
  for (const stream of [child.stdout!, child.stderr!]) {
    stream.on("data", (chunk: Buffer) => (output += stripVTControlCharacters(chunk.toString("utf8"))));
  }
  const started = () => output.indexOf("Renderbus is running", from) !== -1;
  await waitFor(() => started() || child.exitCode !== null || undefined, { timeoutMs: 420_000, intervalMs: 200, what: "npm start" });
  if (!started()) throw new Error(`npm start exited (${child.exitCode}):\n${output.slice(-5000)}`);
  return from;
}

/**
 * The environment of a terminal where nothing answers on the ports npm start probes (so it starts its own servers),
 * with free ports for the gateway, and nothing of this test run's (withoutTestRunVariables). Sets
 * `gatewayUrl`.
 */
async function terminalEnv(): Promise<NodeJS.ProcessEnv> {
  const [postgresPort, natsPort, redisPort, gatewayPort, metricsPort] = await Promise.all([getFreePort(), getFreePort(), getFreePort(), getFreePort(), getFreePort()]);
  gatewayUrl = `http://127.0.0.1:${gatewayPort}`;
  return {
    ...withoutTestRunVariables(process.env),
    RENDERBUS_POSTGRES_PORT: String(postgresPort),
    RENDERBUS_NATS_PORT: String(natsPort),
    RENDERBUS_REDIS_PORT: String(redisPort),
    GATEWAY_PORT: String(gatewayPort),
    GATEWAY_METRICS_PORT: String(metricsPort),
  };
}

/** Sends Ctrl-C to npm start's process group and waits until it and every pid in `pids` are gone. */
async function pressCtrlC(pids: number[]): Promise<void> {
  const group = npmStart!.pid!;
  process.kill(-group, "SIGINT");
  try {
    await waitFor(() => (!isProcessAlive(-group) && pids.every((pid) => !isProcessAlive(pid))) || undefined, { timeoutMs: 60_000, intervalMs: 200, what: "every process to exit" });
  } catch (error) {
    // Which ones are left, and in what state (a zombie is dead but unreaped), with what npm start printed last.
    const left = [group, ...pids].filter((pid) => isProcessAlive(pid)).map((pid) => `${pid} ${processSummary(pid)}`);
    throw new Error(`${(error as Error).message}; still there: ${left.join("; ") || "none of the pids (the group)"}\nnpm start printed last:\n${output.slice(-3000)}`);
  }
}

/** A process's state letter and command line, from /proc. */
function processSummary(pid: number): string {
  try {
    const state = readFileSync(`/proc/${pid}/stat`, "utf8").replace(/^.*\) /, "").split(" ")[0];
    const command = readFileSync(`/proc/${pid}/cmdline`, "utf8").split("\0").join(" ").slice(0, 200);
    return `[${state}] ${command}`;
  } catch {
    return "(gone)";
  }
}

describe.skipIf(!isRoot)("npm start from a checkout in a private folder, with nothing running", () => {
  beforeAll(async () => {
    privateParent = await mkdtemp(join(tmpdir(), "renderbus-private-home-"));
    await chmod(privateParent, 0o700);
    checkout = join(privateParent, "renderbus");
    await copyCheckout(checkout);

    const env = await terminalEnv();
    startEnv = env;
    await runNpmStart();
  }, 480_000);

  afterAll(async () => {
    // For a failure's post-mortem: everything npm start printed.
    writeFileSync(keptLogPath("renderbus-start-int-test.log"), output);
    if (npmStart?.pid !== undefined && isProcessAlive(-npmStart.pid)) process.kill(-npmStart.pid, "SIGKILL");
    for (const match of output.matchAll(/(?:postgres|nats|redis): started pid (\d+)/g)) {
      if (isProcessAlive(Number(match[1]))) process.kill(Number(match[1]), "SIGKILL");
    }
    const dataDir = lineMatching(/local servers keep their data in (\S+)/)?.[1];
    if (dataDir?.startsWith("/var/lib/renderbus/")) await rm(dataDir, { recursive: true, force: true });
    if (privateParent) await rm(privateParent, { recursive: true, force: true });
  }, 60_000);

  it("keeps the servers' data in a folder of the checkout's own that the postgres OS user can reach, and says where", () => {
    const chosen = lineMatching(/\[start\] local servers keep their data in (\S+) \((.*)\)/);

    expect(chosen?.[1]).toMatch(/^\/var\/lib\/renderbus\/[0-9a-f]{12}$/);
    expect(chosen?.[2]).toContain(`${checkout} is not reachable by OS user postgres`);
    expect(existsSync(join(chosen![1]!, "postgres", "data", "PG_VERSION"))).toBe(true);
    expect(output).toMatch(/postgres: started pid \d+ at postgres:\/\/postgres@127\.0\.0\.1:\d+\/postgres/);
    expect(output).toMatch(/nats: started pid \d+/);
    expect(output).toMatch(/redis: started pid \d+/);
  });

  it("answers /readyz with 200 once every service is up", async () => {
    await readyzAnswers(200, 30_000);
  });

  it("brings back a worker killed with SIGKILL, printing its last lines, and the new worker completes a job", async () => {
    const workerPid = Number(lineMatching(/\[start\] services: .*worker pid (\d+)/)?.[1]);
    expect(isProcessAlive(workerPid)).toBe(true);

    process.kill(workerPid, "SIGKILL");
    const restarted = await waitFor(() => lineMatching(/\[start\] worker restarted \(pid (\d+)\)/), { timeoutMs: 20_000, what: "the worker's restart" });

    // Services buffer up to 4 KB of log lines (libs/telemetry/src/logger.ts): a SIGKILL may leave nothing to show.
    expect(output).toMatch(/\[start\] worker exited \(SIGKILL\) after [\d.]+ s up; restarting in 0\.5 s(; its last \d+ lines:\n {4}\S| \(it printed nothing\))/);
    const newPid = Number(restarted[1]);
    expect(newPid).not.toBe(workerPid);
    expect(isProcessAlive(newPid)).toBe(true);
    // Counted as restarted once its own /readyz (connected to NATS) answered.
    expect((await fetch(lineMatching(/\[start\] worker health: (\S+)/)![1]!)).status).toBe(200);

    const key = lineMatching(/API key\s+(rb_[A-Za-z0-9_-]+)/)![1]!;
    const media = await startFileServer(await makeTestVideo());
    try {
      const call = api(gatewayUrl, key);
      const submitted = await call("POST", "/jobs", { type: "extract.metadata", inputs: { source: media.url("clip.mp4") } });
      expect(submitted.status).toBe(201);
      const finished = await waitFor(
        async () => {
          const job = (await call("GET", `/jobs/${submitted.body.data.id}`)).body.data;
          return ["completed", "failed", "cancelled"].includes(job.status) ? job : undefined;
        },
        { timeoutMs: 60_000, intervalMs: 250, what: "the job to finish" },
      );
      expect(finished.status).toBe("completed");
    } finally {
      await media.close();
    }
  }, 120_000);

  it("answers /readyz with 503 while a killed gRPC service is down, and 200 once it is back", async () => {
    const jobsPid = Number(lineMatching(/\[start\] services: .*jobs pid (\d+)/)?.[1]);

    process.kill(jobsPid, "SIGKILL");
    await readyzAnswers(503, 10_000);
    await waitFor(() => lineMatching(/\[start\] jobs restarted \(pid \d+\)/), { timeoutMs: 60_000, what: "the jobs service's restart" });
    await readyzAnswers(200, 30_000);
  }, 120_000);

  it("stops everything it started on Ctrl-C", async () => {
    const pids = [...output.matchAll(/(?:postgres|nats|redis): started pid (\d+)|restarted \(pid (\d+)\)|(?:auth|jobs|webhook-dispatcher|worker|gateway) pid (\d+)/g)].map((match) =>
      Number(match[1] ?? match[2] ?? match[3]),
    );
    expect(pids.length).toBeGreaterThanOrEqual(3 + 5 + 2);

    await pressCtrlC(pids);

    const afterCtrlC = output.slice(output.indexOf("[start] stopping services..."));
    expect(afterCtrlC).toContain("[start] stopping services...");
    expect(afterCtrlC).not.toMatch(/restarting in|restarted \(pid/);
    expect(await fetch(`${gatewayUrl}/healthz`).then(() => "answered", () => "refused")).toBe("refused");
  }, 90_000);

  it("starts again on the same data: the same folder, no new cluster, the same demo key", async () => {
    const first = output;
    const from = await runNpmStart();
    const again = output.slice(from);
    const folder = (text: string) => /\[start\] local servers keep their data in (\S+)/.exec(text)?.[1];
    const demoKey = (text: string) => /API key\s+(rb_[A-Za-z0-9_-]+)/.exec(text)?.[1];

    expect(folder(again)).toBe(folder(first));
    expect(again).not.toContain("initdb");
    expect(again).toMatch(/postgres: started pid \d+ .*\(data \/var\/lib\/renderbus\//);
    // .data/demo.json's key still signs in: the database kept the org made by the first start.
    expect(demoKey(again)).toBe(demoKey(first));
    await readyzAnswers(200, 30_000);

    await pressCtrlC([...again.matchAll(/(?:postgres|nats|redis): started pid (\d+)|(?:auth|jobs|webhook-dispatcher|worker|gateway) pid (\d+)/g)].map((match) => Number(match[1] ?? match[2])));
  }, 480_000);
});

describe.skipIf(!isRoot)("npm start as an ordinary user, from that user's private home folder", () => {
  /** `nobody`: an unprivileged user every Linux has, standing in for a developer's own account. */
  const user = { uid: 65534, gid: 65534 };
  let home: string;
  let from: number;
  const ownOutput = () => output.slice(from);

  beforeAll(async () => {
    home = await mkdtemp(join(tmpdir(), "renderbus-user-home-"));
    checkout = join(home, "renderbus");
    await copyCheckout(checkout);
    await run("chown", ["-R", `${user.uid}:${user.gid}`, home]);
    await chmod(home, 0o700);
    startEnv = { ...(await terminalEnv()), HOME: home, USER: "nobody", LOGNAME: "nobody" };
    from = await runNpmStart(user);
  }, 480_000);

  afterAll(async () => {
    writeFileSync(keptLogPath("renderbus-start-int-test.log"), output);
    if (npmStart?.pid !== undefined && isProcessAlive(-npmStart.pid)) process.kill(-npmStart.pid, "SIGKILL");
    for (const match of ownOutput().matchAll(/(?:postgres|nats|redis): started pid (\d+)/g)) {
      if (isProcessAlive(Number(match[1]))) process.kill(Number(match[1]), "SIGKILL");
    }
    if (home) await rm(home, { recursive: true, force: true });
  }, 60_000);

  it("keeps the servers' data in the checkout's .data (PostgreSQL runs as that user) and serves /readyz", async () => {
    expect(ownOutput()).toContain(`[start] local servers keep their data in ${checkout}/.data (inside the checkout)`);
    expect(existsSync(join(checkout, ".data", "postgres", "data", "PG_VERSION"))).toBe(true);
    await readyzAnswers(200, 30_000);
  });

  it("stops everything it started on Ctrl-C", async () => {
    const pids = [...ownOutput().matchAll(/(?:postgres|nats|redis): started pid (\d+)|(?:auth|jobs|webhook-dispatcher|worker|gateway) pid (\d+)/g)].map((match) => Number(match[1] ?? match[2]));
    expect(pids.length).toBe(3 + 5);

    await pressCtrlC(pids);
  }, 90_000);
});
