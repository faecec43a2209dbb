import { randomBytes } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer, type Server } from "node:http";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem, type ServiceName } from "@renderbus/testing";
import { api, createOrg, repoRoot, startReceiver, waitFor } from "./helpers.js";

interface ReceivedSpan {
  service: string;
  name: string;
  traceId: string;
  spanId: string;
  parentSpanId: string;
  /** The spans it links to (work done once for items of many traces links to each of them). */
  links: { traceId: string; spanId: string }[];
}

/**
 * An in-memory OpenTelemetry collector for the test: an OTLP/HTTP (JSON) receiver on loopback. The services run as
 * child processes exporting to it through OTEL_EXPORTER_OTLP_ENDPOINT, exactly as they would to a real collector.
 */
async function startOtlpReceiver() {
  const spans: ReceivedSpan[] = [];
  const server: Server = createServer((request, response) => {
    const chunks: Buffer[] = [];
    request.on("data", (chunk: Buffer) => chunks.push(chunk));
    request.on("end", () => {
      if (request.url === "/v1/traces") {
        const body = JSON.parse(Buffer.concat(chunks).toString()) as {
          resourceSpans?: { resource?: { attributes?: { key: string; value: { stringValue?: string } }[] }; scopeSpans?: { spans?: (Record<string, string> & { links?: { traceId: string; spanId: string }[] })[] }[] }[];
        };
        for (const resourceSpan of body.resourceSpans ?? []) {
          const service = resourceSpan.resource?.attributes?.find((attribute) => attribute.key === "service.name")?.value.stringValue ?? "?";
          for (const scope of resourceSpan.scopeSpans ?? []) {
            for (const span of scope.spans ?? []) {
              const links = (span.links ?? []).map((link) => ({ traceId: link.traceId, spanId: link.spanId }));
              spans.push({ service, name: span.name!, traceId: span.traceId!, spanId: span.spanId!, parentSpanId: span.parentSpanId ?? "", links });
            }
          }
        }
      }
      response.writeHead(200, { "content-type": "application/json" }).end("{}");
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as { port: number };
  return { endpoint: `http://127.0.0.1:${port}`, spans, close: () => new Promise<void>((done) => server.close(() => done())) };
}

/** Series names a scrape declares (`# TYPE`), with the `_bucket`/`_sum`/`_count` series of histograms. */
function declaredSeries(text: string): string[] {
  return [...text.matchAll(/^# TYPE (\S+) (\S+)$/gm)].flatMap(([, name, type]) =>
    type === "histogram" ? [name!, `${name}_bucket`, `${name}_sum`, `${name}_count`] : type === "summary" ? [name!, `${name}_sum`, `${name}_count`] : [name!],
  );
}

const PROMQL_WORDS = new Set(["by", "without", "on", "ignoring", "group_left", "group_right", "bool", "offset", "and", "or", "unless"]);

/** Metric names in a PromQL expression: identifiers that are not functions, keywords, labels or durations. */
function metricNames(expr: string): string[] {
  const bare = expr
    .replace(/\{[^}]*\}/g, " ")
    .replace(/\[[^\]]*\]/g, " ")
    .replace(/\b(by|without|on|ignoring)\s*\([^)]*\)/g, " ");
  return [...bare.matchAll(/(?<![\w.])([a-zA-Z_:][\w:]*)(?![\w:]|\s*\()/g)].map((match) => match[1]!).filter((name) => !PROMQL_WORDS.has(name));
}

async function freePort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const { port } = server.address() as { port: number };
  await new Promise<void>((done) => server.close(() => done()));
  return port;
}

describe("observability end to end: one trace per job, Prometheus metrics on every service", () => {
  let system: RunningSystem;
  let collector: Awaited<ReturnType<typeof startOtlpReceiver>>;
  const metricsPorts = new Map<ServiceName, number>();
  const metricsEnv: Record<string, string> = {};

  beforeAll(async () => {
    collector = await startOtlpReceiver();
    // Services without an HTTP port serve /metrics on their own port (<SERVICE>_METRICS_PORT).
    for (const service of ["auth", "jobs", "worker", "webhook-dispatcher"] as const) {
      const port = await freePort();
      metricsPorts.set(service, port);
      metricsEnv[`${service.toUpperCase().replace(/-/g, "_")}_METRICS_PORT`] = String(port);
    }
    const infra = testInfra();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("tracee2e"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("tracee2e"),
      env: {
        MODE: "test",
        OTEL_EXPORTER_OTLP_ENDPOINT: collector.endpoint,
        ...metricsEnv,
        METRICS_HOST: "127.0.0.1",
        PLANS_JSON: JSON.stringify({ starter: { requestsPerMinute: 100000 } }),
        IP_REQUESTS_PER_MINUTE: "1000000",
      },
    });
  }, 180_000);

  afterAll(async () => {
    await system?.stop();
    await collector?.close();
  });

  it("follows one job from the REST request through gRPC, the outbox, NATS, the worker and every webhook attempt in one trace", async () => {
    const { orgId, key } = await createOrg(system.env, "starter", "Traced");
    const receiver = await startReceiver(() => 200);
    const call = api(system.gatewayUrl, key);
    expect((await call("PATCH", `/orgs/${orgId}`, { webhookUrl: receiver.url, webhookSecret: "whsec_trace" })).status).toBe(200);

    // The client starts the trace: the gateway continues a caller's traceparent, so the trace id is known up front.
    const traceId = randomBytes(16).toString("hex");
    const submitted = await call("POST", "/jobs", { type: "qr.generate", params: { content: "trace me" } }, { traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01` });
    expect(submitted.status).toBe(201);
    await waitFor(() => receiver.received.find((hook) => hook.headers["x-renderbus-event"] === "job.completed"), { timeoutMs: 90_000, what: "job.completed webhook" });

    const servicesInTrace = () => new Set(collector.spans.filter((span) => span.traceId === traceId).map((span) => span.service));
    const wanted = ["gateway", "jobs", "worker", "webhook-dispatcher"];
    await waitFor(() => wanted.every((service) => servicesInTrace().has(service)) || undefined, { timeoutMs: 60_000, what: `spans from ${wanted.join(", ")}` });

    const trace = collector.spans.filter((span) => span.traceId === traceId);
    expect(trace.find((span) => span.service === "gateway")?.name).toBe("POST /jobs");
    expect(trace.some((span) => span.service === "jobs" && span.name.endsWith("/SubmitJob"))).toBe(true);
    expect(trace.some((span) => span.service === "worker" && span.name.startsWith("consume jobs.dispatch."))).toBe(true);
    expect(trace.some((span) => span.service === "webhook-dispatcher" && span.name.startsWith("consume jobs.events."))).toBe(true);
    // Every webhook attempt (job.running and job.completed here) is a span of the job's trace.
    const spansOfTrace = () => collector.spans.filter((span) => span.traceId === traceId);
    const attemptSpans = () => spansOfTrace().filter((span) => span.name.startsWith("webhook attempt")).length;
    await waitFor(() => attemptSpans() >= receiver.received.length || undefined, { timeoutMs: 60_000, what: "a span per webhook attempt" }).catch(() => undefined);
    expect(attemptSpans(), spansOfTrace().map((span) => `${span.service}: ${span.name}`).join("\n")).toBeGreaterThanOrEqual(receiver.received.length);
    // The jobs service projects the attempts' outcomes from batched messages (one per group of attempts, mixing
    // traces): those consume spans are in no job's trace, but link to the attempt spans of this one.
    const attemptSpanIds = () => new Set(spansOfTrace().filter((span) => span.name.startsWith("webhook attempt")).map((span) => span.spanId));
    const linkedProjection = () =>
      collector.spans.find((span) => span.service === "jobs" && span.name === "consume webhooks.events.deliveries.updated" && span.links.some((link) => link.traceId === traceId && attemptSpanIds().has(link.spanId)));
    await waitFor(linkedProjection, { timeoutMs: 30_000, what: "a jobs projection span linked to a webhook attempt of the trace" });
    expect(linkedProjection()!.traceId).not.toBe(traceId);
    // One tree: every span's parent is in the trace, except the gateway's root, whose parent is the caller's span.
    const root = trace.find((span) => span.service === "gateway")!;
    const orphans = () => {
      const ids = new Set(spansOfTrace().map((span) => span.spanId));
      return spansOfTrace().filter((span) => span !== root && !ids.has(span.parentSpanId)).map((span) => `${span.service}: ${span.name}`);
    };
    await waitFor(() => orphans().length === 0 || undefined, { timeoutMs: 30_000, what: "every parent span exported" }).catch(() => undefined);
    expect(orphans()).toEqual([]);
    await receiver.close();
  }, 240_000);

  it("keeps concurrent jobs of one org in their own traces, though one scheduling pass dispatches them together", async () => {
    const { key } = await createOrg(system.env, "starter", "Concurrent");
    const call = api(system.gatewayUrl, key);
    const traceIds = [1, 2, 3].map(() => randomBytes(16).toString("hex"));
    const jobIds = await Promise.all(
      traceIds.map(async (traceId, index) => {
        const submitted = await call("POST", "/jobs", { type: "qr.generate", params: { content: `concurrent ${index}` } }, { traceparent: `00-${traceId}-${randomBytes(8).toString("hex")}-01` });
        expect(submitted.status).toBe(201);
        return (submitted.body as { data: { id: string } }).data.id;
      }),
    );
    await waitFor(async () => {
      const statuses = await Promise.all(jobIds.map(async (jobId) => (await call("GET", `/jobs/${jobId}`)).body.data.status as string));
      return statuses.every((status) => status === "completed") || undefined;
    }, { timeoutMs: 120_000, what: "three jobs completed" });
    const workerSpanIn = (traceId: string) => collector.spans.some((span) => span.traceId === traceId && span.service === "worker" && span.name.startsWith("consume jobs.dispatch."));
    await waitFor(() => traceIds.every(workerSpanIn) || undefined, { timeoutMs: 60_000, what: "a worker span in each job's trace" }).catch(() => undefined);
    expect(traceIds.map(workerSpanIn)).toEqual([true, true, true]);
  }, 240_000);

  it("serves Prometheus metrics on every service, including every metric the Grafana dashboard queries", async () => {
    // One job with a webhook, so request, job, dispatch and delivery metrics all have something to count.
    const { orgId, key } = await createOrg(system.env, "starter", "Metered");
    const receiver = await startReceiver(() => 200);
    const call = api(system.gatewayUrl, key);
    expect((await call("PATCH", `/orgs/${orgId}`, { webhookUrl: receiver.url, webhookSecret: "whsec_metrics" })).status).toBe(200);
    expect((await call("POST", "/jobs", { type: "qr.generate", params: { content: "metered" } })).status).toBe(201);
    await waitFor(() => receiver.received.find((hook) => hook.headers["x-renderbus-event"] === "job.completed"), { timeoutMs: 90_000, what: "job.completed webhook" });
    await receiver.close();

    const scrape = async (url: string) => {
      const response = await fetch(url);
      expect(response.status).toBe(200);
      return response.text();
    };
    // The gateway's metrics are on GATEWAY_METRICS_PORT only: its public port does not serve them.
    expect((await fetch(`${system.gatewayUrl}/metrics`)).status).toBe(404);
    const texts: Record<string, string> = { gateway: await scrape(system.gatewayMetricsUrl) };
    for (const service of ["auth", "jobs", "worker", "webhook-dispatcher"] as const) {
      const port = metricsPorts.get(service);
      texts[service] = await scrape(`http://127.0.0.1:${port}/metrics`);
      expect(texts[service]).toContain(`service="${service}"`);
    }
    const exported = new Set(Object.values(texts).flatMap(declaredSeries));
    const dashboard = JSON.parse(readFileSync(join(repoRoot, "deploy", "grafana", "renderbus.json"), "utf8")) as { panels: { targets?: { expr: string }[] }[] };
    const queried = new Set(dashboard.panels.flatMap((panel) => panel.targets ?? []).flatMap((target) => metricNames(target.expr)));
    expect(queried.size).toBeGreaterThan(10);
    for (const name of queried) expect(exported, `${name} (queried by the dashboard) is exported`).toContain(name);

    // The values follow what happened.
    const value = (text: string, series: string) => Number(new RegExp(`^${series.replace(/[{}"=,/.]/g, "\\$&")} (\\S+)$`, "m").exec(text)?.[1] ?? NaN);
    expect(value(texts.gateway!, 'http_requests_total{method="POST",route="/jobs",status="201",service="gateway"}')).toBeGreaterThanOrEqual(1);
    expect(value(texts.jobs!, 'jobs_by_status{status="completed",service="jobs"}')).toBeGreaterThanOrEqual(1);
    expect(value(texts.worker!, 'worker_dispatches_total{outcome="completed",service="worker"}')).toBeGreaterThanOrEqual(1);
    await waitFor(async () => {
      const text = await scrape(`http://127.0.0.1:${metricsPorts.get("webhook-dispatcher")}/metrics`);
      return value(text, 'webhook_deliveries_total{outcome="succeeded",service="webhook-dispatcher"}') >= 2 || undefined;
    }, { timeoutMs: 30_000, what: "succeeded deliveries counted" });
  }, 240_000);
});
