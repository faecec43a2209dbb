import { createServer, type Server, type ServerResponse } from "node:http";
import { afterEach, describe, expect, it } from "vitest";
import { RenderbusClient } from "./client.js";
import { RenderbusError, WaitTimeoutError } from "./errors.js";

const servers: Server[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => new Promise((resolve) => server.close(resolve))));
});

const job = (status: string) => ({ id: "job_1", type: "qr.generate", status });
const json = (response: ServerResponse, status: number, body: unknown) => response.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));

/** A fake API: `stream` answers GET /jobs/job_1/events, `statuses` are served in turn by GET /jobs/job_1. */
async function api({ stream, statuses }: { stream: (response: ServerResponse) => void; statuses: string[] }) {
  const calls = { stream: 0, get: 0 };
  const server = createServer((request, response) => {
    if (request.url === "/jobs/job_1/events") {
      calls.stream++;
      return stream(response);
    }
    const status = statuses[Math.min(calls.get++, statuses.length - 1)]!;
    json(response, 200, { data: job(status) });
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  servers.push(server);
  const client = new RenderbusClient({ apiKey: "rb_test", baseUrl: `http://127.0.0.1:${(server.address() as { port: number }).port}`, retry: { baseDelayMs: 1, maxDelayMs: 5 } });
  return { client, calls };
}

describe("waitForJob", () => {
  it("follows the job's event stream to the terminal status, reporting each change", async () => {
    const { client, calls } = await api({
      statuses: [],
      stream: (response) => {
        response.writeHead(200, { "content-type": "text/event-stream" });
        for (const status of ["waiting", "running", "completed"]) response.write(`event: ${status}\ndata: ${JSON.stringify(job(status))}\n\n`);
        response.end();
      },
    });
    const updates: string[] = [];
    const done = await client.waitForJob("job_1", { onUpdate: (update) => updates.push(update.status) });
    expect(done.status).toBe("completed");
    expect(updates).toEqual(["waiting", "running", "completed"]);
    expect(calls.get).toBe(0);
  });

  it("watchJob yields each progress reading of the running job, then the terminal job", async () => {
    const running = (percent: number, updatedAt: number) => ({ ...job("running"), progress: { percent, etaMs: 1000, updatedAt } });
    const { client } = await api({
      statuses: [],
      stream: (response) => {
        response.writeHead(200, { "content-type": "text/event-stream" });
        response.write(`event: running\ndata: ${JSON.stringify({ ...job("running"), progress: null })}\n\n`);
        for (const [percent, at] of [[12.5, 1000], [40, 1500], [40, 1500], [87.1, 2000]] as const) response.write(`event: progress\ndata: ${JSON.stringify(running(percent, at))}\n\n`);
        response.write(`event: completed\ndata: ${JSON.stringify({ ...job("completed"), progress: { percent: 100, etaMs: 0, updatedAt: 2100 } })}\n\n`);
        response.end();
      },
    });
    const seen: Array<[string, number | null | undefined]> = [];
    for await (const update of client.jobs.watch("job_1")) seen.push([update.status, update.progress?.percent]);
    // The repeated reading (same updatedAt) is not yielded twice.
    expect(seen).toEqual([["running", undefined], ["running", 12.5], ["running", 40], ["running", 87.1], ["completed", 100]]);
  });

  it("falls back to polling when the stream is unavailable", async () => {
    const { client, calls } = await api({
      statuses: ["running", "running", "failed"],
      stream: (response) => json(response, 503, { error: { code: "SERVICE_UNAVAILABLE", message: "down" } }),
    });
    const updates: string[] = [];
    const done = await client.jobs.wait("job_1", { timeoutMs: 60_000, onUpdate: (update) => updates.push(update.status) });
    expect(done.status).toBe("failed");
    expect(updates).toEqual(["running", "failed"]);
    expect(calls.get).toBe(3);
  });

  it("throws WaitTimeoutError with the last status when the job does not finish in time", async () => {
    const { client } = await api({ statuses: ["running"], stream: (response) => json(response, 503, { error: { code: "SERVICE_UNAVAILABLE", message: "down" } }) });
    const error = await client.waitForJob("job_1", { timeoutMs: 200 }).catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(WaitTimeoutError);
    expect(error).toMatchObject({ code: "WAIT_TIMEOUT", jobId: "job_1", lastStatus: "running" });
  });

  it("does not wait on errors that waiting cannot fix", async () => {
    const { client } = await api({ statuses: [], stream: (response) => json(response, 404, { error: { code: "NOT_FOUND", message: "Job not found" } }) });
    const error = await client.waitForJob("job_1").catch((caught: unknown) => caught);
    expect(error).toBeInstanceOf(RenderbusError);
    expect(error).toMatchObject({ code: "NOT_FOUND", status: 404 });
  });
});
