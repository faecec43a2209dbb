/**
 * The README's quickstart, run as written: every fenced block marked `quickstart` (run to completion, in one shell
 * session whose exports carry over from block to block, as in one terminal) or `quickstart-background` (left running
 * as in a terminal of its own, until its output shows the `until` text), in order, from a copy of this checkout,
 * starting with the real `npm start` (its own PostgreSQL, NATS and Redis, as on a fresh machine). The only change made
 * to the commands: the two addresses they name (the gateway's 127.0.0.1:3000 and the receiver's 127.0.0.1:4000) are
 * free ports here, since other test runs share this machine. Then the receiver must have verified a job.completed
 * webhook for each job, and every http://127.0.0.1:3000 link of the quickstart's text must answer.
 */
import { spawn, type ChildProcess } from "node:child_process";
import { chmodSync, mkdtempSync, readFileSync, writeFileSync } from "node:fs";
import { rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { stripVTControlCharacters } from "node:util";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { getFreePort } from "../libs/testing/src/free-port.js";
import { isProcessAlive } from "../libs/testing/src/local-process.js";
import { keptLogPath } from "../libs/testing/src/run-tmpdir.js";
import { copyCheckout, withoutTestRunVariables } from "./checkout-copy.js";
import { repoRoot, waitFor } from "./helpers.js";

export interface QuickstartBlock {
  /** `run`: to completion, must exit 0; `background`: keeps running, ready once its output contains `until`. */
  kind: "run" | "background";
  until?: string;
  code: string;
}

/** The quickstart section of the README: from its heading to the next `## ` heading. */
export function quickstartSection(readme: string): string {
  const start = readme.indexOf("\n## Quickstart");
  if (start === -1) throw new Error("README.md has no ## Quickstart section");
  const end = readme.indexOf("\n## ", start + 1);
  return readme.slice(start, end === -1 ? undefined : end);
}

/** The blocks marked `sh quickstart` / `sh quickstart-background until="..."`, dedented, in order. */
export function quickstartBlocks(readme: string): QuickstartBlock[] {
  const blocks: QuickstartBlock[] = [];
  for (const match of readme.matchAll(/^( *)```sh (quickstart(?:-background)?)(?: until="([^"]+)")?\n([\s\S]*?)^\1```$/gm)) {
    const [, indent, marker, until, body] = match;
    const code = body!
      .split("\n")
      .map((line) => (line.startsWith(indent!) ? line.slice(indent!.length) : line))
      .join("\n")
      .trim();
    blocks.push(marker === "quickstart" ? { kind: "run", code } : { kind: "background", until: until!, code });
  }
  return blocks;
}

const readme = readFileSync(join(repoRoot, "README.md"), "utf8");

describe("the README's quickstart parser", () => {
  it("finds npm start first, then the commands, in the quickstart section", () => {
    const blocks = quickstartBlocks(quickstartSection(readme));
    expect(blocks[0]).toEqual({ kind: "background", until: "Renderbus is running", code: "npm start" });
    expect(blocks.filter((block) => block.kind === "run").length).toBeGreaterThanOrEqual(2);
    // The README still opens with the two commands.
    expect(readme.indexOf("npm start ")).toBeLessThan(readme.indexOf("\n## "));
    expect(readme.indexOf("npm test ")).toBeLessThan(readme.indexOf("\n## "));
  });
});

const isRoot = process.getuid?.() === 0;

describe.skipIf(!isRoot)("the README's quickstart, run as written against a real npm start", () => {
  const section = quickstartSection(readme);
  const blocks = quickstartBlocks(section);
  const background: ChildProcess[] = [];
  const outputs = new Map<QuickstartBlock, string>();
  let workDir: string;
  let checkout: string;
  let stateFile: string;
  let env: NodeJS.ProcessEnv;
  let gatewayAddress: string;
  let receiverAddress: string;

  const localize = (text: string) => text.replaceAll("127.0.0.1:3000", gatewayAddress).replaceAll("127.0.0.1:4000", receiverAddress);
  const allOutput = () => [...outputs.values()].join("\n");

  beforeAll(async () => {
    // Not a private folder (start.int.test.ts covers that): the servers' data stays in the copy's .data.
    workDir = mkdtempSync(join(tmpdir(), "renderbus-quickstart-"));
    chmodSync(workDir, 0o755);
    checkout = join(workDir, "renderbus");
    await copyCheckout(checkout);
    stateFile = join(workDir, "shell-state.sh");
    writeFileSync(stateFile, "");
    const [postgresPort, natsPort, redisPort, gatewayPort, metricsPort, workerMetricsPort, receiverPort] = await Promise.all(Array.from({ length: 7 }, () => getFreePort()));
    gatewayAddress = `127.0.0.1:${gatewayPort}`;
    receiverAddress = `127.0.0.1:${receiverPort}`;
    env = {
      ...withoutTestRunVariables(process.env),
      HOME: workDir,
      RENDERBUS_POSTGRES_PORT: String(postgresPort),
      RENDERBUS_NATS_PORT: String(natsPort),
      RENDERBUS_REDIS_PORT: String(redisPort),
      GATEWAY_PORT: String(gatewayPort),
      GATEWAY_METRICS_PORT: String(metricsPort),
      WORKER_METRICS_PORT: String(workerMetricsPort),
      // The receiver's port (examples/webhook-receiver reads PORT, default 4000).
      PORT: String(receiverPort),
      // The quickstart's responses are checked against /openapi.json too (services/gateway/src/http/response-check.ts).
      GATEWAY_CHECK_RESPONSES: "true",
    };
  }, 300_000);

  afterAll(async () => {
    writeFileSync(keptLogPath("renderbus-readme-quickstart.log"), allOutput());
    for (const child of background.reverse()) {
      if (child.pid === undefined || !isProcessAlive(-child.pid)) continue;
      try {
        process.kill(-child.pid, "SIGINT");
        // npm start stops every service and server it started within a minute (start.int.test.ts). Stopped means its
        // whole process group is gone: the shell itself dies of the SIGINT at once (a signal, so its exitCode stays
        // null), while what it started may still be shutting down.
        await waitFor(() => !isProcessAlive(-child.pid!) || undefined, { timeoutMs: 90_000, intervalMs: 200, what: "a background command to stop" }).catch(() => process.kill(-child.pid!, "SIGKILL"));
      } catch {
        // already gone
      }
    }
    for (const match of allOutput().matchAll(/(?:postgres|nats|redis): started pid (\d+)/g)) {
      if (isProcessAlive(Number(match[1]))) process.kill(Number(match[1]), "SIGKILL");
    }
    if (workDir) await rm(workDir, { recursive: true, force: true });
  }, 300_000);

  it("goes from npm start to a job on a real file, a verified webhook and the dashboard", async () => {
    expect(blocks.length).toBeGreaterThanOrEqual(4);
    for (const block of blocks) {
      const code = localize(block.code);
      outputs.set(block, "");
      const append = (chunk: Buffer) => outputs.set(block, outputs.get(block)! + stripVTControlCharacters(chunk.toString("utf8")));
      if (block.kind === "background") {
        // Its own process group, as in a terminal of its own: Ctrl-C (SIGINT to the group) stops it.
        const child = spawn("bash", ["-c", `set -a; source '${stateFile}'; set +a; ${code}`], { cwd: checkout, env, detached: true, stdio: ["ignore", "pipe", "pipe"] });
        background.push(child);
        child.stdout!.on("data", append);
        child.stderr!.on("data", append);
        await waitFor(() => outputs.get(block)!.includes(block.until!) || child.exitCode !== null || child.signalCode !== null || undefined, { timeoutMs: 480_000, intervalMs: 200, what: `"${block.until}" from ${block.code}` });
        if (!outputs.get(block)!.includes(block.until!)) throw new Error(`${block.code} exited (${child.exitCode ?? child.signalCode}):\n${outputs.get(block)!.slice(-5000)}`);
      } else {
        const script = `set -euo pipefail\nsource '${stateFile}'\n${code}\nexport -p > '${stateFile}'\n`;
        const child = spawn("bash", ["-c", script], { cwd: checkout, env, stdio: ["ignore", "pipe", "pipe"] });
        child.stdout.on("data", append);
        child.stderr.on("data", append);
        const exitCode = await new Promise<number | null>((done) => child.on("close", done));
        expect(exitCode, `${block.code}\n---\n${outputs.get(block)!.slice(-5000)}`).toBe(0);
      }
    }

    // The CLI waited for the thumbnail job to complete; the receiver verified a job.completed for each of the two jobs.
    const commands = blocks.filter((block) => block.kind === "run").map((block) => outputs.get(block)!).join("\n");
    expect(commands).toMatch(/completed/);
    expect(commands).not.toMatch(/INTERNAL_ERROR/);
    const receiver = blocks.find((block) => block.code.includes("webhook-receiver"))!;
    await waitFor(() => (outputs.get(receiver)!.match(/verified job\.completed job_/g)?.length ?? 0) >= 2 || undefined, {
      timeoutMs: 180_000,
      intervalMs: 250,
      what: `two verified job.completed webhooks; receiver output:\n${outputs.get(receiver)}`,
    });
    expect(outputs.get(receiver)).not.toContain("refused a delivery");
    // A delivery its signature does not verify is answered 401, as the reference handler does.
    const forged = await fetch(`http://${receiverAddress}/hook`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-renderbus-signature": `sha256=${"0".repeat(64)}`, "x-renderbus-event": "job.completed" },
      body: JSON.stringify({ event: "job.completed", jobId: "job_forged" }),
    });
    expect(forged.status).toBe(401);

    // Every link of the quickstart's text to the running system answers: the dashboard, the API reference.
    const links = [...new Set([...section.matchAll(/http:\/\/127\.0\.0\.1:3000\/(?:[\w/.-]*[\w/])?/g)].map(([link]) => link))];
    expect(links).toEqual(expect.arrayContaining(["http://127.0.0.1:3000/app/", "http://127.0.0.1:3000/docs"]));
    for (const link of links) {
      const response = await fetch(localize(link));
      expect(response.status, link).toBe(200);
      expect(response.headers.get("content-type"), link).toMatch(/^text\/html/);
    }
  }, 900_000);
});
