import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { runLoad } from "./run-load.js";

describe("runLoad (a load in a bundled child process)", () => {
  let server: Server;
  let url: string;
  const seen: string[] = [];

  beforeAll(async () => {
    server = createServer((request, response) => {
      seen.push(`${request.method} ${request.url}`);
      request.resume();
      request.on("end", () => response.writeHead(request.url === "/missing" ? 404 : 200).end("ok"));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("runs exactly `count` POSTs of a post-loop and reports them", async () => {
    const before = seen.length;
    const result = await runLoad({ kind: "post-loop", url: `${url}/hook`, headers: { "content-type": "application/json" }, body: "{}", concurrency: 4, count: 50 });
    expect(result.ok).toBe(50);
    expect(result.errors).toBe(0);
    expect(seen.slice(before).every((line) => line === "POST /hook")).toBe(true);
    expect(seen.length - before).toBe(50);
  });

  it("counts only 2xx answers of a fixed-duration HTTP load as successes", async () => {
    const result = await runLoad({ kind: "http", url: `${url}/missing`, method: "GET", connections: 2, durationSeconds: 1 });
    expect(result.ok).toBe(0);
    expect(result.errors).toBeGreaterThan(0);
    expect(result.non2xx?.["404"]).toBeGreaterThan(0);
  });

  it("rejects with the child's error when the load fails", async () => {
    await expect(runLoad({ kind: "append", databaseUrl: "postgres://nobody@127.0.0.1:1/none", schema: "s", concurrency: 1, durationSeconds: 1 })).rejects.toThrow(/load append failed/);
  });
});
