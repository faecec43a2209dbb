import { createServer, type ServerResponse } from "node:http";
import { randomUUID } from "node:crypto";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { CallToolResultSchema, CreateTaskResultSchema, McpError, type CallToolResult } from "@modelcontextprotocol/sdk/types.js";
import { createTestDatabase, startSystem, testInfra, testNamespace, type RunningSystem } from "@renderbus/testing";
import { api, createOrg, makeTestVideo, repoRoot, startFileServer, waitFor } from "./helpers.js";

/** The official MCP client over Streamable HTTP, with a request timeout above wait_for_job's longest wait. */
async function connectMcp(gatewayUrl: string, token: string): Promise<Client> {
  const client = new Client({ name: "renderbus-e2e-long-jobs", version: "1.0.0" });
  await client.connect(new StreamableHTTPClientTransport(new URL("/mcp", gatewayUrl), { requestInit: { headers: { authorization: `Bearer ${token}` } } }));
  return client;
}

const LONG = { timeout: 120_000 };

async function callOk(client: Client, name: string, args: Record<string, unknown> = {}): Promise<{ data: any }> {
  const result = (await client.callTool({ name, arguments: args }, CallToolResultSchema, LONG)) as CallToolResult;
  if (result.isError) throw new Error(`${name} failed: ${JSON.stringify(result.content)}`);
  return result.structuredContent as { data: any };
}

const textOf = (result: CallToolResult): string => (result.content[0] as { text: string }).text;

/**
 * An input server outside our system that never finishes: headers, then a byte every few seconds. A job reading
 * from it stays unfinished (downloading) until cancelled, which is what waits and cancels need to see.
 */
async function startStallingServer() {
  const open = new Set<ServerResponse>();
  const timers = new Set<NodeJS.Timeout>();
  const server = createServer((_request, response) => {
    open.add(response);
    response.writeHead(200, { "content-type": "video/mp4", "content-length": String(50 * 1024 * 1024) });
    const timer = setInterval(() => response.write(Buffer.alloc(1)), 5_000);
    timers.add(timer);
    response.on("close", () => {
      clearInterval(timer);
      open.delete(response);
    });
  });
  await new Promise<void>((done) => server.listen(0, "127.0.0.1", done));
  const port = (server.address() as { port: number }).port;
  return {
    url: `http://127.0.0.1:${port}/never-ending.mp4`,
    close: () =>
      new Promise<void>((done) => {
        for (const timer of timers) clearInterval(timer);
        for (const response of open) response.destroy();
        server.close(() => done());
      }),
  };
}

describe("MCP for long jobs: wait_for_job, tasks, annotations", () => {
  let system: RunningSystem;
  let media: Awaited<ReturnType<typeof startFileServer>>;
  let stalling: Awaited<ReturnType<typeof startStallingServer>>;
  let org: { orgId: string; key: string };
  let client: Client;

  beforeAll(async () => {
    const infra = testInfra();
    media = await startFileServer(await makeTestVideo());
    stalling = await startStallingServer();
    system = await startSystem({
      repoRoot,
      databaseUrl: await createTestDatabase("mcp_long"),
      natsUrl: infra.natsUrl,
      redisUrl: infra.redisUrl,
      namespace: testNamespace("mcp-long"),
      env: { MODE: "test", LOG_LEVEL: "info" },
    });
    org = await createOrg(system.env, "scale", "Long-job agents");
    client = await connectMcp(system.gatewayUrl, org.key);
  }, 180_000);

  afterAll(async () => {
    await client?.close();
    await system?.stop();
    await media?.close();
    await stalling?.close();
  });

  const stalledJob = () => ({ type: "extract.metadata", inputs: { source: stalling.url }, idempotencyKey: randomUUID() });

  it("annotates every tool, declares tasks for submit_job and submit_batch only, and the tasks capability", async () => {
    const { tools } = await client.listTools();
    for (const tool of tools) {
      expect(tool.annotations, tool.name).toMatchObject({
        readOnlyHint: expect.any(Boolean),
        destructiveHint: expect.any(Boolean),
        idempotentHint: expect.any(Boolean),
        openWorldHint: expect.any(Boolean),
      });
    }
    const byName = new Map(tools.map((tool) => [tool.name, tool]));
    expect(byName.get("get_job")!.annotations).toMatchObject({ readOnlyHint: true, destructiveHint: false });
    expect(byName.get("cancel_job")!.annotations).toMatchObject({ readOnlyHint: false, destructiveHint: true });
    expect(byName.get("submit_job")!.annotations).toMatchObject({ readOnlyHint: false, openWorldHint: true, idempotentHint: true });
    expect(byName.get("wait_for_job")!.annotations).toMatchObject({ readOnlyHint: true });
    expect(tools.filter((tool) => tool.execution?.taskSupport).map((tool) => [tool.name, tool.execution!.taskSupport])).toEqual(
      expect.arrayContaining([
        ["submit_job", "optional"],
        ["submit_batch", "optional"],
      ]),
    );
    expect(tools.filter((tool) => tool.execution?.taskSupport)).toHaveLength(2);
    expect(client.getServerCapabilities()?.tasks).toMatchObject({ cancel: {}, requests: { tools: { call: {} } } });
  });

  it("wait_for_job holds until the job finishes and returns it (real ffprobe)", async () => {
    const submitted = await callOk(client, "submit_job", { type: "extract.metadata", inputs: { source: media.url("clip.mp4") }, idempotencyKey: randomUUID() });
    let job = submitted.data;
    // A wait ends when the job is terminal or after timeoutSeconds; under load a few waits may be needed.
    for (let calls = 0; calls < 5 && !["completed", "failed", "cancelled"].includes(job.status); calls++) {
      job = (await callOk(client, "wait_for_job", { jobId: job.id, timeoutSeconds: 60 })).data;
    }
    expect(job).toMatchObject({ id: submitted.data.id, status: "completed", result: { url: expect.any(String) } });
    // Same shape as get_job: whatever GET /jobs/{id} shows (progress included, when the job has it).
    const got = await callOk(client, "get_job", { jobId: job.id });
    expect(Object.keys(job).sort()).toEqual(Object.keys(got.data).sort());
  });

  it("wait_for_job returns the unfinished job when the time is up, refuses more than 60 s, and NOT_FOUND for unknown jobs", async () => {
    const submitted = await callOk(client, "submit_job", stalledJob());
    const waited = await callOk(client, "wait_for_job", { jobId: submitted.data.id, timeoutSeconds: 1 });
    expect(["waiting", "dispatched", "running"]).toContain(waited.data.status);
    expect(waited.data.id).toBe(submitted.data.id);

    const tooLong = (await client.callTool({ name: "wait_for_job", arguments: { jobId: submitted.data.id, timeoutSeconds: 61 } })) as CallToolResult;
    expect(tooLong.isError).toBe(true);
    expect(textOf(tooLong)).toMatch(/^VALIDATION_ERROR: .*timeoutSeconds/);
    const unknown = (await client.callTool({ name: "wait_for_job", arguments: { jobId: "job_nope", timeoutSeconds: 1 } })) as CallToolResult;
    expect(textOf(unknown)).toMatch(/^NOT_FOUND: /);

    // The REST route behind the tool answers the same.
    const rest = api(system.gatewayUrl, org.key);
    const restWait = await rest("GET", `/jobs/${submitted.data.id}/wait?timeoutSeconds=0`);
    expect(restWait.status).toBe(200);
    expect(restWait.body.data.id).toBe(submitted.data.id);
    expect((await rest("GET", `/jobs/${submitted.data.id}/wait?timeoutSeconds=61`)).status).toBe(400);
    await callOk(client, "cancel_job", { jobId: submitted.data.id });
  });

  it("runs submit_job as a task: tasks/result waits for the job, tasks/get polls it, callToolStream yields the job", async () => {
    const created = await client.request(
      { method: "tools/call", params: { name: "submit_job", arguments: { type: "extract.metadata", inputs: { source: media.url("clip.mp4") }, idempotencyKey: randomUUID() }, task: { ttl: 60_000 } } },
      CreateTaskResultSchema,
      LONG,
    );
    const taskId = created.task.taskId;
    expect(taskId).toMatch(/^job_/);
    expect(["working", "completed"]).toContain(created.task.status);
    expect(created.task).toMatchObject({ ttl: null, createdAt: expect.any(String), lastUpdatedAt: expect.any(String) });

    // tasks/result holds until the job is terminal, then returns the job as get_job does.
    const result = (await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, LONG)) as CallToolResult;
    expect(result.isError ?? false).toBe(false);
    expect((result.structuredContent as { data: any }).data).toMatchObject({ id: taskId, status: "completed", result: { url: expect.any(String) } });
    expect(JSON.parse(textOf(result))).toEqual(result.structuredContent);

    const task = await client.experimental.tasks.getTask(taskId);
    expect(task).toMatchObject({ taskId, status: "completed" });

    // The SDK's own task flow: create, poll tasks/get, then tasks/result.
    const messages: Array<{ type: string; [key: string]: any }> = [];
    const stream = client.experimental.tasks.callToolStream(
      { name: "submit_job", arguments: { type: "qr.generate", params: { content: "https://renderbus.dev/tasks" }, idempotencyKey: randomUUID() } },
      CallToolResultSchema,
      { ...LONG, task: { ttl: 60_000 } },
    );
    for await (const message of stream) messages.push(message);
    expect(messages[0]).toMatchObject({ type: "taskCreated", task: { taskId: expect.stringMatching(/^job_/) } });
    const last = messages.at(-1)!;
    expect(last.type).toBe("result");
    expect(last.result.structuredContent.data).toMatchObject({ id: messages[0]!.task.taskId, type: "qr.generate", status: "completed" });
  });

  it("tasks/cancel cancels the job; the task and the job both say cancelled", async () => {
    const stream = client.experimental.tasks.callToolStream({ name: "submit_job", arguments: stalledJob() }, CallToolResultSchema, { ...LONG, task: {} });
    const first = await stream.next();
    expect(first.value).toMatchObject({ type: "taskCreated" });
    const taskId: string = (first.value as { task: { taskId: string } }).task.taskId;
    await stream.return(undefined);

    expect((await client.experimental.tasks.getTask(taskId)).status).toBe("working");
    const cancelled = await client.experimental.tasks.cancelTask(taskId);
    expect(cancelled).toMatchObject({ taskId, status: "cancelled" });
    expect((await callOk(client, "get_job", { jobId: taskId })).data.status).toBe("cancelled");
    expect((await client.experimental.tasks.getTask(taskId)).status).toBe("cancelled");
    const result = (await client.experimental.tasks.getTaskResult(taskId, CallToolResultSchema, LONG)) as CallToolResult;
    expect(result.isError).toBe(true);
    expect((result.structuredContent as { data: any }).data.status).toBe("cancelled");

    // A finished task cannot be cancelled again (-32602).
    await expect(client.experimental.tasks.cancelTask(taskId)).rejects.toMatchObject({ code: -32602 });
  });

  it("runs submit_batch as a task bound to the batch, and cancels a batch task", async () => {
    const messages: Array<{ type: string; [key: string]: any }> = [];
    const batchJobs = [
      { type: "qr.generate", params: { content: "one" } },
      { type: "qr.generate", params: { content: "two" } },
    ];
    for await (const message of client.experimental.tasks.callToolStream(
      { name: "submit_batch", arguments: { jobs: batchJobs, idempotencyKey: randomUUID() } },
      CallToolResultSchema,
      { ...LONG, task: {} },
    )) {
      messages.push(message);
    }
    expect(messages[0]).toMatchObject({ type: "taskCreated", task: { taskId: expect.stringMatching(/^batch_/) } });
    const last = messages.at(-1)!;
    expect(last.type).toBe("result");
    expect(last.result.structuredContent.data).toMatchObject({ id: messages[0]!.task.taskId, status: "completed", counts: { completed: 2 } });

    const stalledBatch = await client.request(
      { method: "tools/call", params: { name: "submit_batch", arguments: { jobs: [{ type: "extract.metadata", inputs: { source: stalling.url } }], idempotencyKey: randomUUID() }, task: {} } },
      CreateTaskResultSchema,
      LONG,
    );
    const batchTaskId = stalledBatch.task.taskId;
    expect(stalledBatch.task.status).toBe("working");
    expect(await client.experimental.tasks.cancelTask(batchTaskId)).toMatchObject({ taskId: batchTaskId, status: "cancelled" });
    // The batch's counts follow its jobs' events: the task turns cancelled once the batch has seen them.
    await waitFor(async () => (await client.experimental.tasks.getTask(batchTaskId)).status === "cancelled", { timeoutMs: 30_000, intervalMs: 500, what: "the batch task to be cancelled" });
  });

  it("refuses a task for a tool without task support (-32601), a bad submit (-32602 with the REST code), and another org's task", async () => {
    await expect(
      client.request({ method: "tools/call", params: { name: "get_job", arguments: { jobId: "job_x" }, task: {} } }, CreateTaskResultSchema),
    ).rejects.toMatchObject({ code: -32601 });
    const refused = await client
      .request({ method: "tools/call", params: { name: "submit_job", arguments: { type: "teleport", inputs: {} }, task: {} } }, CreateTaskResultSchema)
      .catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(McpError);
    expect(refused).toMatchObject({ code: -32602, message: expect.stringMatching(/INVALID_JOB_TYPE: /) });

    const mine = await callOk(client, "submit_job", { type: "qr.generate", params: { content: "mine" }, idempotencyKey: randomUUID() });
    const other = await createOrg(system.env, "scale", "Someone else");
    const otherClient = await connectMcp(system.gatewayUrl, other.key);
    try {
      await expect(otherClient.experimental.tasks.getTask(mine.data.id)).rejects.toMatchObject({ code: -32602, message: expect.stringMatching(/Task not found/) });
      await expect(otherClient.experimental.tasks.cancelTask(mine.data.id)).rejects.toMatchObject({ code: -32602 });
      await expect(otherClient.experimental.tasks.getTask("not-a-task")).rejects.toMatchObject({ code: -32602 });
    } finally {
      await otherClient.close();
    }
  });
});
