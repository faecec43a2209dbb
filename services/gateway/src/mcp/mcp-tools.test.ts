import { readFileSync } from "node:fs";
import { join } from "node:path";
import { AjvJsonSchemaValidator } from "@modelcontextprotocol/sdk/validation/ajv";
import { describe, expect, it } from "vitest";
import { apiRoutes } from "../routes/index.js";
import { annotationsOf, buildMcpTools, snakeCaseOf, splitToolArguments, toolNameOf } from "./mcp-tools.js";

/** The tools docs/mcp.md promises agents ("Tools are the route table"). */
const SPEC_TOOLS = [
  "submit_job", "submit_batch", "get_job", "list_jobs", "cancel_job", "get_batch", "list_job_types", "get_job_type_schema",
  "get_balance", "get_usage", "get_org", "update_org_webhook", "list_api_keys", "create_api_key", "revoke_api_key",
  "list_webhook_deliveries", "retry_webhook_delivery", "wait_for_job",
];

describe("MCP tools generated from the route table", () => {
  const tools = buildMcpTools(apiRoutes);
  const byName = new Map(tools.map((tool) => [tool.name, tool]));

  it("offers every tool docs/mcp.md lists, and docs/mcp.md names every tool it offers", () => {
    for (const name of SPEC_TOOLS) expect(byName.has(name), name).toBe(true);
    const doc = readFileSync(join(import.meta.dirname, "../../../../docs/mcp.md"), "utf8");
    expect(tools.map((tool) => tool.name).filter((name) => !new RegExp(`\\b${name}\\b`).test(doc))).toEqual([]);
  });

  it("has one tool per route except the ones marked mcpTool: false", () => {
    const expected = apiRoutes.map(toolNameOf).filter((name): name is string => name !== undefined);
    expect(tools.map((tool) => tool.name).sort()).toEqual([...expected].sort());
    expect(expected.length).toBe(apiRoutes.filter((route) => route.mcpTool !== false).length);
  });

  it("names tools by the snake_case operationId", () => {
    expect(snakeCaseOf("submitJob")).toBe("submit_job");
    expect(snakeCaseOf("getJobTypeSchema")).toBe("get_job_type_schema");
    expect(snakeCaseOf("listWebhookDeliveries")).toBe("list_webhook_deliveries");
  });

  it("merges path, query and body fields into one object schema", () => {
    const update = byName.get("update_org_webhook")!;
    expect(update.inputSchema.type).toBe("object");
    expect(Object.keys(update.inputSchema.properties as object).sort()).toEqual(["orgId", "webhookSecret", "webhookUrl"]);
    expect(update.inputSchema.required).toEqual(["orgId"]);
    const list = byName.get("list_jobs")!;
    expect(Object.keys(list.inputSchema.properties as object)).toContain("cursor");
  });

  it("gives the submit tools an idempotencyKey argument whose description says to reuse it on retry", () => {
    for (const name of ["submit_job", "submit_batch"]) {
      const tool = byName.get(name)!;
      const property = (tool.inputSchema.properties as Record<string, { description?: string }>).idempotencyKey;
      expect(property?.description).toMatch(/SAME key/);
      expect(tool.description).toMatch(/reuse the same value when retrying/);
    }
    expect((byName.get("get_job")!.inputSchema.properties as object)).not.toHaveProperty("idempotencyKey");
  });

  it("lists the route's error codes in the tool description", () => {
    expect(byName.get("submit_job")!.description).toContain("INVALID_JOB_TYPE");
    expect(byName.get("cancel_job")!.description).toContain("CONFLICT");
  });

  it("splits arguments back into the REST request parts", () => {
    const split = splitToolArguments(byName.get("update_org_webhook")!, { orgId: "org_1", webhookUrl: "https://example.com/hook" });
    expect(split).toEqual({ params: { orgId: "org_1" }, query: {}, body: { webhookUrl: "https://example.com/hook" } });
    const submit = splitToolArguments(byName.get("submit_job")!, { type: "qr.generate", params: { content: "x" }, idempotencyKey: "k1" });
    expect(submit).toMatchObject({ body: { type: "qr.generate", params: { content: "x" } }, idempotencyKey: "k1" });
  });

  it("refuses an unknown argument with VALIDATION_ERROR", () => {
    expect(() => splitToolArguments(byName.get("get_job")!, { jobId: "job_1", bogus: 1 })).toThrow(/unknown argument bogus/);
  });

  it("gives every tool an output schema from its route's response, which MCP clients' own validator accepts results by", () => {
    // The validator the MCP SDK's Client applies to structured results when a tool declares an output schema.
    const validator = new AjvJsonSchemaValidator();
    for (const tool of tools) {
      expect(tool.outputSchema.type, tool.name).toBe("object");
      const validate = validator.getValidator(tool.outputSchema);
      expect(validate({ error: { code: "NOT_FOUND", message: "Job not found" } }).valid, tool.name).toBe(true);
      expect(validate({ unexpected: true }).valid, tool.name).toBe(false);
    }
    const getJob = validator.getValidator(byName.get("get_job")!.outputSchema);
    const job = {
      id: "job_1", orgId: "org_1", batchId: null, type: "thumbnail", status: "completed", inputs: { source: "https://example.com/a.mp4" }, params: {}, metadata: {},
      result: { url: "https://example.com/o", metadata: { durationMs: 1, width: 2, height: 3, fileSize: 4 } }, cost: { credits: 1, breakdown: "1" }, error: null,
      timing: { createdAt: 1, dispatchedAt: 2, startedAt: 3, completedAt: 4 }, progress: null, webhookDeliveries: [],
    };
    expect(getJob({ data: job }).valid).toBe(true);
    expect(getJob({ data: { ...job, status: "done" } }).valid).toBe(false);
    const listJobs = validator.getValidator(byName.get("list_jobs")!.outputSchema);
    expect(listJobs({ data: [job], nextCursor: null }).valid).toBe(true);
    expect(listJobs({ data: job, nextCursor: null }).valid).toBe(false);
    // Named schemas that refer to others (CreatedApiKey -> ApiKey) travel with the tool.
    const createKey = byName.get("create_api_key")!.outputSchema;
    expect(Object.keys(createKey.$defs as object).sort()).toEqual(["ApiKey", "CreatedApiKey"]);
  });

  it("annotates every tool from its route: GET reads, DELETE destroys, effects say the rest", () => {
    for (const tool of tools) {
      expect(tool.annotations).toEqual(annotationsOf(tool.route));
      expect(Object.keys(tool.annotations).sort()).toEqual(["destructiveHint", "idempotentHint", "openWorldHint", "readOnlyHint", "title"]);
      if (tool.route.method === "GET") expect(tool.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false, idempotentHint: true });
      else expect(tool.annotations.readOnlyHint).toBe(false);
    }
    const hints = (name: string) => byName.get(name)!.annotations;
    expect(hints("wait_for_job")).toMatchObject({ readOnlyHint: true, openWorldHint: false });
    expect(hints("submit_job")).toMatchObject({ destructiveHint: false, idempotentHint: true, openWorldHint: true });
    expect(hints("submit_batch")).toMatchObject({ destructiveHint: false, idempotentHint: true, openWorldHint: true });
    expect(hints("cancel_job")).toMatchObject({ destructiveHint: true, idempotentHint: true, openWorldHint: false });
    expect(hints("revoke_api_key")).toMatchObject({ destructiveHint: true, idempotentHint: true });
    expect(hints("create_api_key")).toMatchObject({ destructiveHint: false, idempotentHint: false, openWorldHint: false });
    expect(hints("update_org_webhook")).toMatchObject({ destructiveHint: true, idempotentHint: true });
    expect(hints("send_test_webhook")).toMatchObject({ openWorldHint: true, idempotentHint: false });
    expect(hints("retry_webhook_delivery")).toMatchObject({ openWorldHint: true, idempotentHint: false });
  });

  it("declares task support on submit_job and submit_batch only (from the route's mcpTask)", () => {
    const withTasks = tools.filter((tool) => tool.execution).map((tool) => tool.name);
    expect(withTasks.sort()).toEqual(["submit_batch", "submit_job"]);
    expect(byName.get("submit_job")!.execution).toEqual({ taskSupport: "optional" });
    expect(byName.get("submit_job")!.description).toMatch(/MCP task/);
  });

  it("gives wait_for_job a jobId and a timeoutSeconds of at most 60", () => {
    const wait = byName.get("wait_for_job")!;
    const properties = wait.inputSchema.properties as Record<string, { maximum?: number; default?: number }>;
    expect(Object.keys(properties).sort()).toEqual(["jobId", "timeoutSeconds"]);
    expect(properties.timeoutSeconds).toMatchObject({ maximum: 60, default: 30 });
    expect(wait.inputSchema.required).toEqual(["jobId"]);
  });
});
