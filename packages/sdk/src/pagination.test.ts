import { createServer, type Server } from "node:http";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RenderbusClient } from "./client.js";

/** 7 jobs served newest first in pages of `limit`, with the last id of a page as the cursor. */
const ids = Array.from({ length: 7 }, (_, index) => `job_${7 - index}`);
let server: Server;
let baseUrl: string;
const requests: URL[] = [];

beforeAll(async () => {
  server = createServer((request, response) => {
    const url = new URL(request.url!, "http://x");
    requests.push(url);
    const limit = Number(url.searchParams.get("limit") ?? 50);
    const cursor = url.searchParams.get("cursor");
    const start = cursor ? ids.indexOf(cursor) + 1 : 0;
    const page = ids.slice(start, start + limit);
    const nextCursor = start + limit < ids.length ? page.at(-1)! : null;
    response.writeHead(200, { "content-type": "application/json" }).end(JSON.stringify({ data: page.map((id) => ({ id, status: url.searchParams.get("status") })), nextCursor }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  baseUrl = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
});
afterAll(() => new Promise((resolve) => server.close(resolve)));

describe("cursor pagination", () => {
  const client = () => new RenderbusClient({ apiKey: "rb_test", baseUrl });

  it("iterates every item across pages with for await, passing filters and the cursor along", async () => {
    requests.length = 0;
    const seen: string[] = [];
    for await (const job of client().jobs.list({ status: "completed", limit: 3 })) seen.push(job.id);
    expect(seen).toEqual(ids);
    expect(requests.map((url) => url.searchParams.get("cursor"))).toEqual([null, "job_5", "job_2"]);
    expect(requests.every((url) => url.searchParams.get("status") === "completed" && url.searchParams.get("limit") === "3")).toBe(true);
  });

  it("fetches the next page only when the previous one is used up", async () => {
    requests.length = 0;
    for await (const job of client().jobs.list({ limit: 3 })) if (job.id === "job_6") break;
    expect(requests).toHaveLength(1);
  });

  it("exposes pages, the first page alone, and a bounded toArray", async () => {
    const pages = [];
    for await (const page of client().webhooks.deliveries({ limit: 4 }).pages()) pages.push(page.data.length);
    expect(pages).toEqual([4, 3]);
    expect(await client().jobs.list({ limit: 2 }).firstPage()).toMatchObject({ nextCursor: "job_6", data: [{ id: "job_7" }, { id: "job_6" }] });
    expect((await client().jobs.list({ limit: 2 }).toArray(5)).map((job) => job.id)).toEqual(ids.slice(0, 5));
    expect((await client().jobs.list({ limit: 2, cursor: "job_3" }).toArray()).map((job) => job.id)).toEqual(["job_2", "job_1"]);
  });
});
