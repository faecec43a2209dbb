import { execFile } from "node:child_process";
import { Agent, request as httpRequest } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { signOutputUrl } from "@renderbus/storage";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { createOrg, repoRoot } from "../../../../e2e/helpers.js";

const OUTPUT_SIGNING_SECRET = "hostile-requests-output-signing-secret";
/** The audit's body: an authenticated job whose metadata nests 150,000 arrays (about 300 KB, under the 1 MB limit). */
const NESTING = 150_000;
/**
 * SECURITY-AUDIT finding 20: a replica that takes hostile bodies still answers its liveness probe this fast. The
 * audit's body blocked the replica for 186 s; a replica that refuses it answers in 2-70 ms, with a sample now and then
 * past 100 ms on a loaded 2-core host running the suite (2026-12-01: 104-126 ms, one per burst), hence 250.
 */
const HEALTHZ_BUDGET_MS = 250;

/** GET over one kept-alive connection, timed from the request to the end of the answer. */
function timedGet(url: string, agent: Agent): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve, reject) => {
    const request = httpRequest(url, { agent, timeout: 10_000 }, (response) => {
      response.resume();
      response.on("end", () => resolve({ status: response.statusCode ?? 0, ms: performance.now() - started }));
    });
    request.on("timeout", () => request.destroy(new Error(`GET ${url} took over 10 s`)));
    request.on("error", reject);
    request.end();
  });
}

/**
 * A hostile client in its own process: two connections POST the audit's body back to back for 2 s (ten each at
 * least). Resolves with every answer (status and body) once all are in.
 */
function sendHostileBodies(url: string, key: string): Promise<{ status: number; body: unknown }[]> {
  const script = `
    import { Agent, request } from "node:http";
    const nesting = ${NESTING};
    const body = Buffer.from('{"type":"qr.generate","params":{"content":"x"},"metadata":{"m":' + "[".repeat(nesting) + "]".repeat(nesting) + "}}");
    const agent = new Agent({ keepAlive: true });
    const post = () => new Promise((resolve, reject) => {
      const sent = request(process.env.HOSTILE_URL, { method: "POST", agent, headers: { authorization: "Bearer " + process.env.HOSTILE_KEY, "content-type": "application/json", "content-length": body.length } }, (response) => {
        const chunks = [];
        response.on("data", (chunk) => chunks.push(chunk));
        response.on("end", () => resolve({ status: response.statusCode, body: JSON.parse(Buffer.concat(chunks).toString()) }));
      });
      sent.setTimeout(15000, () => sent.destroy(new Error("no answer within 15 s")));
      sent.on("error", reject);
      sent.end(body);
    });
    const answers = [];
    const until = Date.now() + 2000;
    await Promise.all([0, 1].map(async () => {
      for (let sent = 0; sent < 10 || Date.now() < until; sent++) answers.push(await post());
    }));
    process.stdout.write(JSON.stringify(answers));
    agent.destroy();
  `;
  return new Promise((resolve, reject) => {
    execFile(process.execPath, ["--input-type=module", "-e", script], { env: { ...process.env, HOSTILE_URL: url, HOSTILE_KEY: key }, maxBuffer: 16 * 1024 * 1024, timeout: 120_000 }, (error, stdout, stderr) =>
      error ? reject(new Error(`hostile client failed: ${stderr || error.message}`)) : resolve(JSON.parse(stdout) as { status: number; body: unknown }[]),
    );
  });
}

describe("a gateway under hostile requests (SECURITY-AUDIT findings 13, 20, 23)", () => {
  let system: RunningSystem;
  let key: string;
  const lines: string[] = [];

  beforeAll(async () => {
    const infra = testInfra();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("hostile"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("hostile"),
      env: { OUTPUT_SIGNING_SECRET, PLANS_JSON: JSON.stringify({ pro: { requestsPerMinute: 100000 } }), IP_REQUESTS_PER_MINUTE: "1000000" },
      onLine: (service, line) => lines.push(`${service} ${line}`),
    });
    ({ key } = await createOrg(system.env, "pro", "Hostile"));
  }, 180_000);

  afterAll(async () => {
    await system?.stop();
  });

  const post = (path: string, body: string | undefined) =>
    fetch(`${system.gatewayUrl}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${key}`, ...(body !== undefined ? { "content-type": "application/json" } : {}) },
      ...(body !== undefined ? { body } : {}),
      signal: AbortSignal.timeout(15_000),
    });

  /** One hostile burst, with /healthz timed every 10 ms (on its own connection) until the burst is over. */
  async function hostileBurst() {
    const agent = new Agent({ keepAlive: true, maxSockets: 1 });
    const healthz = `${system.gatewayUrl}/healthz`;
    for (let warmUp = 0; warmUp < 3; warmUp++) expect((await timedGet(healthz, agent)).status).toBe(200);
    const sender = sendHostileBodies(`${system.gatewayUrl}/jobs`, key);
    const samples: { status: number; ms: number }[] = [];
    let sending = true;
    const probing = (async () => {
      while (sending) {
        samples.push(await timedGet(healthz, agent));
        await new Promise((resolve) => setTimeout(resolve, 10));
      }
    })();
    const answers = await sender.finally(() => (sending = false));
    await probing;
    agent.destroy();
    return { answers, samples, slowest: Math.max(...samples.map((sample) => sample.ms)) };
  }

  it("answers 150,000 nested arrays with 400 VALIDATION_ERROR while /healthz keeps answering within 250 ms", async () => {
    // A blocked replica misses every burst by seconds; a busy test machine can stall any process for a moment, so a
    // burst is tried up to three times and one whose every /healthz answered within budget passes.
    const bursts: Awaited<ReturnType<typeof hostileBurst>>[] = [];
    for (let attempt = 0; attempt < 3 && !bursts.some((burst) => burst.slowest < HEALTHZ_BUDGET_MS); attempt++) {
      const burst = await hostileBurst();
      bursts.push(burst);
      expect(burst.answers.length).toBeGreaterThanOrEqual(20);
      for (const answer of burst.answers) {
        expect(answer).toEqual({ status: 400, body: { error: { code: "VALIDATION_ERROR", message: "body: nested deeper than 64 levels" } } });
      }
      expect(burst.samples.length).toBeGreaterThanOrEqual(20);
      expect(burst.samples.every((sample) => sample.status === 200)).toBe(true);
    }
    const latencies = bursts.map((burst) => burst.samples.map((sample) => Math.round(sample.ms)).join(" "));
    expect(Math.min(...bursts.map((burst) => burst.slowest)), `/healthz latencies (ms) during each hostile burst:\n${latencies.join("\n")}`).toBeLessThan(HEALTHZ_BUDGET_MS);
    // The replica is still whole: a valid job goes through.
    expect((await post("/jobs", JSON.stringify({ type: "qr.generate", params: { content: "after" }, metadata: { nested: [[[1]]] } }))).status).toBe(201);
  }, 120_000);

  it("accepts an absent body on routes that take none, and refuses fields or query parameters they do not have", async () => {
    const cancelUnknown = await post("/jobs/job_00000000000000000000000000/cancel", undefined);
    expect(cancelUnknown.status).toBe(404);
    const withField = await post("/jobs/job_00000000000000000000000000/cancel", JSON.stringify({ force: true }));
    expect(withField.status).toBe(400);
    expect(await withField.json()).toEqual({ error: { code: "VALIDATION_ERROR", message: "body: unknown field force" } });
    const withQuery = await fetch(`${system.gatewayUrl}/me?verbose=1`, { headers: { authorization: `Bearer ${key}` } });
    expect(withQuery.status).toBe(400);
    expect(await withQuery.json()).toEqual({ error: { code: "VALIDATION_ERROR", message: "query query: unknown field verbose" } });
    const mcpWithQuery = await post("/mcp?session=1", JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }));
    expect(mcpWithQuery.status).toBe(400);
    expect(await mcpWithQuery.json()).toEqual({ error: { code: "VALIDATION_ERROR", message: "query query: unknown field session" } });
  });

  it("serves /metrics on GATEWAY_METRICS_PORT only, and /readyz", async () => {
    expect((await fetch(`${system.gatewayUrl}/metrics`)).status).toBe(404);
    const metrics = await fetch(system.gatewayMetricsUrl);
    expect(metrics.status).toBe(200);
    expect(await metrics.text()).toContain("http_requests_total");
    expect((await fetch(`${system.gatewayUrl}/readyz`)).status).toBe(200);
  });

  it("keeps the signature of an /outputs link out of every log line", async () => {
    const link = new URL(signOutputUrl({ publicUrl: system.gatewayUrl, key: "org_x/job_x/output.mp4", expiresAt: Date.now() + 60_000, secret: OUTPUT_SIGNING_SECRET }));
    const signature = link.searchParams.get("signature")!;
    expect((await fetch(link)).status).toBe(404);
    // Services write logs in 4 KB batches: more request lines push the download's line out.
    const logged = () => lines.some((line) => line.startsWith("gateway") && line.includes('"route":"/outputs/*"'));
    for (let round = 0; round < 20 && !logged(); round++) {
      await Promise.all(Array.from({ length: 20 }, () => fetch(`${system.gatewayUrl}/healthz`).then((response) => response.text())));
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(logged()).toBe(true);
    expect(lines.filter((line) => line.includes(signature))).toEqual([]);
  });
});
