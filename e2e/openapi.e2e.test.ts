import { Validator } from "@seriousme/openapi-schema-validator";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormatsModule from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { api, createOrg, repoRoot, startReceiver, waitFor } from "./helpers.js";

const addFormats = addFormatsModule as unknown as (ajv: Ajv2020) => Ajv2020;

describe("the served OpenAPI document describes what the running API answers", () => {
  let system: RunningSystem;

  beforeAll(async () => {
    const infra = testInfra();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("openapie2e"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("openapie2e"),
      env: { MODE: "test", IP_REQUESTS_PER_MINUTE: "1000000", PLANS_JSON: JSON.stringify({ starter: { requestsPerMinute: 100000 } }) },
    });
  }, 180_000);

  afterAll(async () => {
    await system?.stop();
  });

  it("serves a valid OpenAPI 3.1 document whose response schemas match live responses, errors included", async () => {
    const response = await fetch(`${system.gatewayUrl}/openapi.json`);
    expect(response.status).toBe(200);
    const document = (await response.json()) as { servers: { url: string }[] };
    expect(document.servers[0]!.url).toBe(system.gatewayUrl);
    const validation = await new Validator().validate(document as never);
    expect(validation.errors ?? []).toEqual([]);

    const ajv = addFormats(new Ajv2020({ strict: false, allErrors: true }));
    ajv.addSchema(document, "openapi.json");
    /** The JSON Schema of one documented response, resolved inside the document. */
    const schemaOf = (method: string, path: string, status: number) => {
      const pointer = ["paths", path, method, "responses", String(status), "content", "application/json", "schema"]
        .map((part) => encodeURIComponent(part.replace(/~/g, "~0").replace(/\//g, "~1")))
        .join("/");
      return ajv.compile({ $ref: `openapi.json#/${pointer}` });
    };
    const expectDocumented = (method: string, path: string, answer: { status: number; body: unknown }) => {
      const validate = schemaOf(method, path, answer.status);
      expect(validate(answer.body), `${method.toUpperCase()} ${path} ${answer.status}: ${JSON.stringify(validate.errors)}`).toBe(true);
    };

    const { orgId, key } = await createOrg(system.env, "starter", "Documented");
    const call = api(system.gatewayUrl, key);
    const receiver = await startReceiver(() => 200);
    expectDocumented("patch", "/orgs/{orgId}", await call("PATCH", `/orgs/${orgId}`, { webhookUrl: receiver.url, webhookSecret: "whsec_documented" }));
    const submitted = await call("POST", "/jobs", { type: "qr.generate", params: { content: "documented" } });
    expectDocumented("post", "/jobs", submitted);
    const jobId = (submitted.body as { data: { id: string } }).data.id;
    await waitFor(async () => ((await call("GET", `/jobs/${jobId}`)).body.data.status === "completed" ? true : undefined), { timeoutMs: 90_000, what: "job completed" });
    await waitFor(() => receiver.received.find((hook) => hook.headers["x-renderbus-event"] === "job.completed"), { timeoutMs: 60_000, what: "job.completed webhook" });

    const job = await call("GET", `/jobs/${jobId}`);
    expectDocumented("get", "/jobs/{jobId}", job);
    expectDocumented("get", "/jobs/{jobId}/wait", await call("GET", `/jobs/${jobId}/wait?timeoutSeconds=0`));
    expectDocumented("get", "/jobs/{jobId}/wait", await call("GET", `/jobs/${jobId}/wait?timeoutSeconds=61`));
    // A control: the schemas are specific (a job is not an org).
    expect(schemaOf("get", "/orgs/current", 200)(job.body)).toBe(false);
    expectDocumented("get", "/jobs", await call("GET", "/jobs?limit=1"));
    expectDocumented("post", "/batches", await call("POST", "/batches", { jobs: [{ type: "qr.generate", params: { content: "b" } }] }));
    expectDocumented("get", "/batches", await call("GET", "/batches"));
    expectDocumented("get", "/orgs/current", await call("GET", "/orgs/current"));
    expectDocumented("post", "/api-keys", await call("POST", "/api-keys", { name: "documented" }));
    expectDocumented("get", "/api-keys", await call("GET", "/api-keys"));
    expectDocumented("get", "/webhooks/deliveries", await call("GET", "/webhooks/deliveries"));
    // Errors carry the documented error schema under the documented status.
    expectDocumented("get", "/jobs/{jobId}", await call("GET", "/jobs/job_00000000000000000000000000"));
    expectDocumented("post", "/jobs/{jobId}/cancel", await call("POST", `/jobs/${jobId}/cancel`));
    expectDocumented("post", "/jobs", await call("POST", "/jobs", { type: "qr.generate", unknown: true }));
    expectDocumented("get", "/jobs", await api(system.gatewayUrl, "rb_not_a_key")("GET", "/jobs"));

    // The webhook that arrived matches the document's `webhooks` payload.
    const payload = ajv.compile({ $ref: "openapi.json#/components/schemas/JobCompletedEvent" });
    const hook = receiver.received.find((each) => each.headers["x-renderbus-event"] === "job.completed")!;
    expect(payload(JSON.parse(hook.rawBody.toString())), JSON.stringify(payload.errors)).toBe(true);
    await receiver.close();
  });
});
