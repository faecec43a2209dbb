import { spawn, type ChildProcess } from "node:child_process";
import { mkdtempSync, readFileSync, statSync, writeFileSync } from "node:fs";
import { createServer, type IncomingHttpHeaders, type Server } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { createOrg, repoRoot, startReceiver, waitFor } from "../../../e2e/helpers.js";
import { RenderbusClient, verifyWebhook } from "../src/index.js";
import { packSdk, type PackedSdk } from "./packed-sdk.js";

/** The package as published: its bin runs the built dist/, with the dependencies the manifest declares. */
let packed: PackedSdk;

/** The CLI as a user runs it: the published package's bin, a child process with its own config file and no inherited Renderbus settings. */
function cli(configPath: string) {
  const bin = packed.bin;
  const env = Object.fromEntries(Object.entries(process.env).filter(([name]) => !name.startsWith("RENDERBUS_")));
  const start = (args: string[]) => spawn(process.execPath, [bin, ...args], { env: { ...env, RENDERBUS_CONFIG: configPath }, stdio: ["ignore", "pipe", "pipe"] });
  const run = (...args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((done) => {
      const child = start(args);
      let stdout = "";
      let stderr = "";
      child.stdout.on("data", (chunk) => (stdout += chunk));
      child.stderr.on("data", (chunk) => (stderr += chunk));
      child.on("close", (code) => done({ code, stdout, stderr }));
    });
  return { run, start };
}

interface Forwarded {
  rawBody: Buffer;
  headers: IncomingHttpHeaders;
  valid: boolean;
}

/** A developer's local webhook handler that checks signatures with the SDK's verifyWebhook. */
async function startLocalHandler(secret: string) {
  const received: Forwarded[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      const rawBody = Buffer.concat(chunks);
      const valid = verifyWebhook(rawBody, request.headers, secret);
      received.push({ rawBody, headers: request.headers, valid });
      response.writeHead(valid ? 200 : 401).end();
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  return {
    url: `http://127.0.0.1:${(server.address() as { port: number }).port}/hook`,
    received,
    close: () => new Promise<void>((done) => server.close(() => done())),
  };
}

describe("renderbus CLI against the running system", () => {
  let system: RunningSystem;
  const children: ChildProcess[] = [];

  beforeAll(async () => {
    packed = packSdk();
    const infra = testInfra();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("clie2e"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("clie2e"),
      env: { MODE: "test", IP_REQUESTS_PER_MINUTE: "1000000", PLANS_JSON: JSON.stringify({ starter: { requestsPerMinute: 100000 } }) },
    });
  }, 120_000);

  afterAll(async () => {
    for (const child of children) child.kill("SIGKILL");
    await system?.stop();
    packed?.remove();
  });

  it("is the package npm publishes: built JavaScript, its types, the bin and the README, no sources or tests", () => {
    expect(packed.files).toContain("bin/renderbus.js");
    expect(packed.files).toContain("dist/cli/main.js");
    expect(packed.files).toContain("dist/index.d.ts");
    expect(packed.files).toContain("README.md");
    expect(packed.files.filter((file) => !/^(dist\/.+\.(js|d\.ts)|bin\/renderbus\.js|README\.md|package\.json)$/.test(file))).toEqual([]);
  });

  it("logs in, runs `jobs submit --wait` to completion, and exits 3 for a job that fails", async () => {
    const { orgId, key } = await createOrg(system.env, "starter", "CLI");
    const configPath = join(mkdtempSync(join(tmpdir(), "rb-cli-")), "renderbus", "config.json");
    const { run } = cli(configPath);

    expect(await run("jobs", "list")).toMatchObject({ code: 4, stderr: expect.stringContaining("Not logged in") });
    const login = await run("login", "--api-key", key, "--base-url", system.gatewayUrl);
    expect(login).toMatchObject({ code: 0, stdout: expect.stringContaining(orgId) });
    expect(statSync(configPath).mode & 0o777).toBe(0o600);
    expect(JSON.parse(readFileSync(configPath, "utf8"))).toMatchObject({ apiKey: key, baseUrl: system.gatewayUrl });

    const submitted = await run("jobs", "submit", "qr.generate", "--param", "content=from the cli", "--wait", "--timeout", "120");
    expect(submitted.code, submitted.stderr).toBe(0);
    const jobId = /job_[0-9A-Za-z]+/.exec(submitted.stdout)?.[0];
    expect(submitted.stdout).toMatch(/job_\w+\s+qr\.generate\s+completed/);
    expect(submitted.stdout).toContain("cost");

    const shown = await run("--json", "jobs", "get", jobId!);
    expect(shown.code).toBe(0);
    expect(JSON.parse(shown.stdout)).toMatchObject({ id: jobId, status: "completed", params: { content: "from the cli" } });
    const listed = await run("--json", "jobs", "list", "--status", "completed");
    expect(JSON.parse(listed.stdout).map((job: { id: string }) => job.id)).toContain(jobId);

    const failing = await run("jobs", "submit", "extract.metadata", "--input", "source=http://127.0.0.1:1/missing.mp4", "--wait", "--timeout", "120");
    expect(failing.code, failing.stdout + failing.stderr).toBe(3);
    expect(failing.stdout).toMatch(/failed/);

    expect((await run("jobs", "get", "job_01J00000000000000000000000")).code).toBe(1);
    expect((await run("--api-key", "rb_not_a_real_key_000000000000000000000000000", "jobs", "list")).code).toBe(4);
  }, 300_000);

  it("manages keys, batches, cancellations and the delivery log with human and --json output", async () => {
    const { orgId, key } = await createOrg(system.env, "starter", "CLI admin");
    const remote = await startReceiver();
    const configPath = join(mkdtempSync(join(tmpdir(), "rb-cli-")), "config.json");
    const { run } = cli(configPath);
    expect((await run("login", "--api-key", key, "--base-url", system.gatewayUrl)).code).toBe(0);
    await new RenderbusClient({ apiKey: key, baseUrl: system.gatewayUrl }).orgs.updateWebhook(orgId, { webhookUrl: remote.url, webhookSecret: "whsec_cli_admin" });

    const created = await run("--json", "keys", "create", "ci key");
    expect(created.code, created.stderr).toBe(0);
    const newKey = JSON.parse(created.stdout) as { id: string; key: string };
    expect(newKey.key).toMatch(/^rb_/);
    expect((await run("keys", "list")).stdout).toContain("ci key");
    expect(await run("keys", "revoke", newKey.id)).toMatchObject({ code: 0, stdout: expect.stringContaining(`Revoked ${newKey.id}`) });
    expect((await run("--api-key", newKey.key, "jobs", "list")).code).toBe(4);

    const jobsFile = join(mkdtempSync(join(tmpdir(), "rb-batch-")), "jobs.json");
    writeFileSync(jobsFile, JSON.stringify({ jobs: [{ type: "qr.generate", params: { content: "a" } }, { type: "qr.generate", params: { content: "b" } }] }));
    const batch = await run("--json", "batches", "submit", "--file", jobsFile);
    expect(batch.code, batch.stderr).toBe(0);
    const batchId = (JSON.parse(batch.stdout) as { id: string }).id;
    const finished = await waitFor(async () => {
      const shown = await run("--json", "batches", "get", batchId);
      const parsed = JSON.parse(shown.stdout) as { status: string; counts: { completed: number } };
      return parsed.status === "completed" ? parsed : undefined;
    }, { timeoutMs: 120_000, intervalMs: 1_000, what: "batch completed" });
    expect(finished.counts.completed).toBe(2);
    expect((await run("batches", "get", batchId)).stdout).toContain("completed 2");
    const listed = JSON.parse((await run("--json", "batches", "list", "--status", "completed")).stdout) as Array<{ id: string }>;
    expect(listed.map((b) => b.id)).toContain(batchId);
    expect((await run("batches", "list")).stdout).toContain(batchId);
    expect((await run("batches", "submit", "--file", jobsFile.replace("jobs.json", "missing.json"))).code).not.toBe(0);

    const submitted = JSON.parse((await run("--json", "jobs", "submit", "qr.generate", "--param", "content=cancel me")).stdout) as { id: string };
    const cancelled = await run("jobs", "cancel", submitted.id);
    // The job may finish before the cancel arrives: then the API answers CONFLICT (exit 1).
    if (cancelled.code === 0) expect(cancelled.stdout).toContain(`Cancelled ${submitted.id}`);
    else expect(cancelled).toMatchObject({ code: 1, stderr: expect.stringContaining("CONFLICT") });

    expect((await run("webhooks", "test")).code).toBe(0);
    const deliveries = JSON.parse((await run("--json", "webhooks", "deliveries", "--event", "webhook.test")).stdout) as Array<{ id: string; status: string }>;
    expect(deliveries[0]).toMatchObject({ status: "succeeded" });
    expect((await run("webhooks", "deliveries", deliveries[0]!.id)).stdout).toMatch(/attempt 1 .* 200 /);
    expect(await run("webhooks", "retry", deliveries[0]!.id)).toMatchObject({ code: 0, stdout: expect.stringContaining(`Retrying ${deliveries[0]!.id}`) });
    await remote.close();
  }, 300_000);

  it("`webhooks endpoints` creates, lists, tests, disables, enables, rotates, recovers and deletes an endpoint", async () => {
    const { key } = await createOrg(system.env, "starter", "CLI endpoints");
    const remote = await startReceiver();
    const configPath = join(mkdtempSync(join(tmpdir(), "rb-cli-")), "config.json");
    const { run } = cli(configPath);
    expect((await run("login", "--api-key", key, "--base-url", system.gatewayUrl)).code).toBe(0);

    const created = await run("--json", "webhooks", "endpoints", "create", remote.url, "--events", "job.failed,webhook.test", "--description", "cli");
    // webhook.test is not an event an endpoint subscribes to: a usage error before any request.
    expect(created.code).toBe(2);
    const made = await run("--json", "webhooks", "endpoints", "create", remote.url, "--events", "job.failed,job.completed", "--description", "cli");
    expect(made.code, made.stderr).toBe(0);
    const endpoint = JSON.parse(made.stdout) as { id: string; secret: string; events: string[] };
    expect(endpoint).toMatchObject({ events: ["job.failed", "job.completed"] });
    expect(endpoint.secret).toMatch(/^whsec_/);
    const human = await run("webhooks", "endpoints", "create", remote.url);
    expect(human.stdout).toMatch(/Created ep_\w+ for .*\n\n {2}whsec_\S+\n\nStore the signing secret now/);

    const listed = await run("webhooks", "endpoints", "list");
    expect(listed.stdout).toMatch(new RegExp(`${endpoint.id}\\s+enabled\\s+job\\.failed,job\\.completed`));
    expect(listed.stdout).not.toContain(endpoint.secret);

    const tested = await run("webhooks", "test", "--endpoint", endpoint.id);
    expect(tested.code, tested.stdout + tested.stderr).toBe(0);
    const testHook = remote.received.find((hook) => hook.headers["x-renderbus-event"] === "webhook.test")!;
    expect(verifyWebhook(testHook.rawBody, testHook.headers, endpoint.secret)).toBe(true);

    expect((await run("webhooks", "endpoints", "update", endpoint.id, "--disable")).stdout).toContain("disabled");
    expect((await run("webhooks", "endpoints", "list")).stdout).toMatch(new RegExp(`${endpoint.id}\\s+disabled`));
    expect((await run("webhooks", "endpoints", "update", endpoint.id, "--enable", "--rate-limit", "5")).stdout).toContain("rate 5/s");

    const rotated = await run("--json", "webhooks", "endpoints", "rotate", endpoint.id, "--grace", "60");
    expect(rotated.code, rotated.stderr).toBe(0);
    const rotation = JSON.parse(rotated.stdout) as { secret: string; previousSecretExpiresAt: number };
    expect(rotation.secret).toMatch(/^whsec_/);
    expect(rotation.secret).not.toBe(endpoint.secret);
    expect(rotation.previousSecretExpiresAt).toBeGreaterThan(Date.now());

    const recovered = await run("webhooks", "endpoints", "recover", endpoint.id, "--since", "1h");
    expect(recovered).toMatchObject({ code: 0, stdout: expect.stringMatching(/Recovering 0 deliveries of ep_/) });

    expect((await run("webhooks", "endpoints", "delete", endpoint.id)).stdout).toContain(`Deleted ${endpoint.id}`);
    expect((await run("webhooks", "endpoints", "get", endpoint.id)).code).toBe(1);
    await remote.close();
  }, 300_000);

  it("`webhooks listen --forward-to` forwards real deliveries, signed with the local secret it prints", async () => {
    const { orgId, key } = await createOrg(system.env, "starter", "Listen");
    const client = new RenderbusClient({ apiKey: key, baseUrl: system.gatewayUrl });
    const remote = await startReceiver();
    await client.orgs.updateWebhook(orgId, { webhookUrl: remote.url, webhookSecret: `whsec_remote_${orgId}` });
    const configPath = join(mkdtempSync(join(tmpdir(), "rb-cli-")), "config.json");
    const { run, start } = cli(configPath);
    expect((await run("login", "--api-key", key, "--base-url", system.gatewayUrl)).code).toBe(0);

    const localSecret = "whsec_local_listen_test";
    const local = await startLocalHandler(localSecret);
    const listener = start(["webhooks", "listen", "--forward-to", local.url, "--secret", localSecret]);
    children.push(listener);
    let output = "";
    listener.stdout!.on("data", (chunk) => (output += chunk));
    listener.stderr!.on("data", (chunk) => (output += chunk));
    await waitFor(() => output.includes("Ready!") && output.includes("(verify with"), { timeoutMs: 60_000, what: "listener ready" });
    expect(output).toContain(`signing secret is ${localSecret}`);

    const tested = await run("webhooks", "test");
    expect(tested.code, tested.stdout + tested.stderr).toBe(0);
    const testEvent = await waitFor(() => local.received.find((hook) => hook.headers["x-renderbus-event"] === "webhook.test"), { timeoutMs: 60_000, what: "forwarded webhook.test" });
    expect(testEvent.valid).toBe(true);
    expect(JSON.parse(testEvent.rawBody.toString())).toMatchObject({ event: "webhook.test", orgId });
    // The forwarded bytes are the bytes the dispatcher sent to the org's real URL.
    const sent = remote.received.find((hook) => hook.headers["x-renderbus-event"] === "webhook.test")!;
    expect(testEvent.rawBody.equals(sent.rawBody)).toBe(true);
    expect(testEvent.headers["x-renderbus-delivery"]).toBe(sent.headers["x-renderbus-delivery"]);

    const job = await client.jobs.submit({ type: "qr.generate", params: { content: "listen" } });
    const completed = await waitFor(
      () => local.received.find((hook) => hook.headers["x-renderbus-event"] === "job.completed" && hook.rawBody.includes(job.id)),
      { timeoutMs: 90_000, what: "forwarded job.completed" },
    );
    expect(completed.valid).toBe(true);
    const delivered = await waitFor(
      () => remote.received.find((hook) => hook.headers["x-renderbus-event"] === "job.completed" && hook.rawBody.includes(job.id)),
      { timeoutMs: 60_000, what: "real job.completed delivery" },
    );
    expect(completed.rawBody.equals(delivered.rawBody)).toBe(true);
    await waitFor(() => output.includes("<-- [200]"), { what: "forward logged" });

    const exited = new Promise<number | null>((done) => listener.on("close", done));
    listener.kill("SIGINT");
    expect(await exited).toBe(0);
    await Promise.all([local.close(), remote.close()]);
  }, 300_000);
});
