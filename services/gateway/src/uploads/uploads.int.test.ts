import { randomBytes } from "node:crypto";
import { mkdtemp, readdir, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import net from "node:net";
import { join } from "node:path";
import { afterEach, describe, expect, it, vi } from "vitest";
import type { auth } from "@renderbus/contracts";
import { unauthorized, validationError } from "@renderbus/errors";
import { authContextOf, gatewayWithFakes, newApiKey, type FakeServices, type GatewayWithFakes } from "../http/gateway-with-fakes.test-support.js";

/**
 * `/uploads` over real sockets (the gateway listening on a free port) with fake auth and jobs services and the test
 * Redis: the tus protocol, resuming after a dropped connection, org scoping, the plan's size cap, rate limits per
 * request, and upload ids as job inputs.
 */

let gateway: GatewayWithFakes | undefined;
afterEach(async () => {
  await gateway?.close();
  gateway = undefined;
});

/** A response's JSON body, as the loosely typed value assertions read. */
const jsonOf = async (response: Response): Promise<any> => response.json();

interface Caller {
  key: string;
  context: auth.AuthContext;
}

async function startGateway(plans: Record<string, auth.AuthContext["plan"]>, services: FakeServices = {}, env: Record<string, string> = {}) {
  const callers: Record<string, Caller> = {};
  for (const [name, plan] of Object.entries(plans)) callers[name] = { key: newApiKey(), context: authContextOf({ plan }) };
  gateway = await gatewayWithFakes({
    ...services,
    auth: {
      resolveApiKey: async ({ key }: { key: string }) => {
        const caller = Object.values(callers).find((candidate) => candidate.key === key);
        if (!caller) throw unauthorized();
        return caller.context;
      },
    },
  }, { PLANS_JSON: JSON.stringify({ free: { requestsPerMinute: 1000 }, pro: { requestsPerMinute: 1000 } }), ...env });
  await gateway.app.listen({ port: 0, host: "127.0.0.1" });
  const address = gateway.app.server.address() as net.AddressInfo;
  const base = `http://127.0.0.1:${address.port}`;
  const call = (caller: Caller, method: string, path: string, headers: Record<string, string> = {}, body?: Uint8Array | string) =>
    fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${caller.key}`, "tus-resumable": "1.0.0", ...headers }, ...(body === undefined ? {} : { body }) });
  const create = async (caller: Caller, length: number) => {
    const response = await call(caller, "POST", "/uploads", { "upload-length": String(length), "upload-metadata": `filename ${Buffer.from("clip.mp4").toString("base64")}` });
    expect(response.status, await response.clone().text()).toBe(201);
    const location = response.headers.get("location")!;
    return { location, id: location.slice(location.lastIndexOf("/") + 1) };
  };
  return { base, port: address.port, callers, call, create };
}

/** Sends a PATCH whose declared body is `total` bytes, writes only `sent` of them, then drops the connection. */
async function patchAndCut(port: number, path: string, key: string, body: Buffer, sent: number): Promise<void> {
  const socket = net.connect(port, "127.0.0.1");
  await new Promise<void>((resolve, reject) => socket.once("connect", resolve).once("error", reject));
  socket.write(
    `PATCH ${path} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${key}\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\n` +
      `Content-Type: application/offset+octet-stream\r\nContent-Length: ${body.length}\r\n\r\n`,
  );
  await new Promise<void>((resolve) => socket.write(body.subarray(0, sent), () => resolve()));
  // Give the server a moment to read what was sent, as a client whose network drops mid-way would have.
  await new Promise((resolve) => setTimeout(resolve, 500));
  socket.destroy();
}

async function offsetOf(call: Awaited<ReturnType<typeof startGateway>>["call"], caller: Caller, id: string): Promise<number> {
  const response = await call(caller, "HEAD", `/uploads/${id}`);
  expect(response.status).toBe(200);
  return Number(response.headers.get("upload-offset"));
}

describe("/uploads (tus 1.0)", () => {
  it("resumes from the server's offset after the connection is cut at 60%", async () => {
    const { port, callers, call, create } = await startGateway({ alice: "pro" });
    const body = randomBytes(4 * 1024 * 1024);
    const { id, location } = await create(callers.alice!, body.length);
    expect(id).toMatch(/^upload_[0-9A-Z]{26}$/);
    expect(new URL(location).pathname).toBe(`/uploads/${id}`);

    await patchAndCut(port, `/uploads/${id}`, callers.alice!.key, body, Math.floor(body.length * 0.6));
    // The server keeps what reached it: wait until its offset settles, then resume from there.
    let offset = -1;
    for (let attempt = 0; attempt < 50; attempt++) {
      const now = await offsetOf(call, callers.alice!, id);
      if (now === offset) break;
      offset = now;
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(offset).toBeGreaterThan(0);
    expect(offset).toBeLessThanOrEqual(Math.floor(body.length * 0.6));

    const shown = await jsonOf(await call(callers.alice!, "GET", `/uploads/${id}`));
    expect(shown.data).toMatchObject({ id, size: body.length, offset, complete: false });

    const rest = await call(callers.alice!, "PATCH", `/uploads/${id}`, { "upload-offset": String(offset), "content-type": "application/offset+octet-stream" }, body.subarray(offset));
    expect(rest.status).toBe(204);
    expect(rest.headers.get("upload-offset")).toBe(String(body.length));

    const done = await jsonOf(await call(callers.alice!, "GET", `/uploads/${id}`));
    expect(done.data).toMatchObject({ id, size: body.length, offset: body.length, complete: true });
    expect(done.data.expiresAt - done.data.createdAt).toBe(24 * 3_600_000);
    expect((await storedBytes(id)).equals(body)).toBe(true);
  });

  it("cuts a PATCH whose body has not arrived by UPLOAD_REQUEST_TIMEOUT_MS like a lost connection: what arrived is kept and the client resumes", async () => {
    const { port, callers, call, create } = await startGateway({ alice: "pro" }, {}, { UPLOAD_REQUEST_TIMEOUT_MS: "1000" });
    const body = randomBytes(256 * 1024);
    const { id } = await create(callers.alice!, body.length);
    const socket = net.connect(port, "127.0.0.1");
    socket.on("error", () => undefined);
    const closed = new Promise<void>((resolve) => socket.once("close", () => resolve()));
    await new Promise<void>((resolve) => socket.once("connect", () => resolve()));
    socket.write(
      `PATCH /uploads/${id} HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nAuthorization: Bearer ${callers.alice!.key}\r\nTus-Resumable: 1.0.0\r\nUpload-Offset: 0\r\n` +
        `Content-Type: application/offset+octet-stream\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    // Half the body, then nothing: the client neither finishes nor leaves.
    socket.write(body.subarray(0, body.length / 2));
    await closed;
    await expect.poll(() => offsetOf(call, callers.alice!, id), { timeout: 10_000 }).toBe(body.length / 2);
    const rest = await call(callers.alice!, "PATCH", `/uploads/${id}`, { "upload-offset": String(body.length / 2), "content-type": "application/offset+octet-stream" }, body.subarray(body.length / 2));
    expect(rest.status).toBe(204);
    expect((await storedBytes(id)).equals(body)).toBe(true);
  });

  it("answers 409 CONFLICT to a PATCH at the wrong offset", async () => {
    const { callers, call, create } = await startGateway({ alice: "free" });
    const { id } = await create(callers.alice!, 10);
    const response = await call(callers.alice!, "PATCH", `/uploads/${id}`, { "upload-offset": "5", "content-type": "application/offset+octet-stream" }, "12345");
    expect(response.status).toBe(409);
    expect((await jsonOf(response)).error.code).toBe("CONFLICT");
  });

  it("answers 412 with the JSON error body to a tus request without Tus-Resumable: 1.0.0, and 400 to an invalid tus header, leaving the upload untouched", async () => {
    const { base, callers, call, create } = await startGateway({ alice: "pro" });
    const { id } = await create(callers.alice!, 10);
    const bare = (method: string, path: string, headers: Record<string, string> = {}) => fetch(`${base}${path}`, { method, headers: { authorization: `Bearer ${callers.alice!.key}`, ...headers } });
    const answers = [
      await bare("POST", "/uploads", { "upload-length": "10" }),
      await call(callers.alice!, "POST", "/uploads", { "upload-length": "10", "tus-resumable": "0.2.2" }),
      await bare("PATCH", `/uploads/${id}`, { "upload-offset": "0", "content-type": "application/offset+octet-stream" }),
      await bare("DELETE", `/uploads/${id}`),
    ];
    for (const answer of answers) {
      expect([answer.status, answer.headers.get("tus-version")]).toEqual([412, "1.0.0"]);
      expect((await jsonOf(answer)).error).toEqual({ code: "VALIDATION_ERROR", message: "Tus-Resumable: required, 1.0.0 (the tus protocol version)" });
    }
    // A tus header tus itself refuses (not a number) gets the same error body.
    const invalid = await call(callers.alice!, "PATCH", `/uploads/${id}`, { "upload-offset": "abc", "content-type": "application/offset+octet-stream" }, "12345");
    expect([invalid.status, invalid.headers.get("content-type")]).toEqual([400, "application/json; charset=utf-8"]);
    expect((await jsonOf(invalid)).error).toMatchObject({ code: "VALIDATION_ERROR", message: expect.stringMatching(/upload-offset/i) });
    const head = await bare("HEAD", `/uploads/${id}`);
    expect(head.status).toBe(412);
    expect(await offsetOf(call, callers.alice!, id)).toBe(0);
  });

  it("keeps uploads to their org: another org's HEAD, PATCH, DELETE and GET are 404, and the upload is untouched", async () => {
    const { callers, call, create } = await startGateway({ alice: "pro", mallory: "pro" });
    const { id } = await create(callers.alice!, 10);
    for (const method of ["HEAD", "PATCH", "DELETE"]) {
      const response = await call(callers.mallory!, method, `/uploads/${id}`, method === "PATCH" ? { "upload-offset": "0", "content-type": "application/offset+octet-stream" } : {}, method === "PATCH" ? "0123456789" : undefined);
      expect({ method, status: response.status }).toEqual({ method, status: 404 });
    }
    const shown = await call(callers.mallory!, "GET", `/uploads/${id}`);
    expect(shown.status).toBe(404);
    expect((await jsonOf(shown)).error.code).toBe("NOT_FOUND");
    expect(await offsetOf(call, callers.alice!, id)).toBe(0);
  });

  it("refuses requests without a credential with 401, before tus sees them", async () => {
    const { base } = await startGateway({ alice: "pro" });
    const response = await fetch(`${base}/uploads`, { method: "POST", headers: { "tus-resumable": "1.0.0", "upload-length": "10" } });
    expect(response.status).toBe(401);
    expect((await jsonOf(response)).error.code).toBe("UNAUTHORIZED");
  });

  it("caps an upload at the plan's max input size with 413 PAYLOAD_TOO_LARGE", async () => {
    const { callers, call } = await startGateway({ alice: "free" });
    const response = await call(callers.alice!, "POST", "/uploads", { "upload-length": String(100 * 1024 * 1024 + 1) });
    expect(response.status).toBe(413);
    expect((await jsonOf(response)).error.code).toBe("PAYLOAD_TOO_LARGE");
    const options = await call(callers.alice!, "OPTIONS", "/uploads");
    expect(options.headers.get("tus-max-size")).toBe(String(100 * 1024 * 1024));
  });

  it("counts each request once against the rate limit, however many bytes a PATCH carries", async () => {
    const { callers, call, create } = await startGateway({ alice: "pro" });
    const body = randomBytes(2 * 1024 * 1024);
    const { id } = await create(callers.alice!, body.length);
    const before = Number((await call(callers.alice!, "HEAD", `/uploads/${id}`)).headers.get("ratelimit-remaining"));
    const patch = await call(callers.alice!, "PATCH", `/uploads/${id}`, { "upload-offset": "0", "content-type": "application/offset+octet-stream" }, body);
    expect(patch.status).toBe(204);
    expect(Number(patch.headers.get("ratelimit-remaining"))).toBe(before - 1);
  });

  it("terminates an upload with DELETE", async () => {
    const { callers, call, create } = await startGateway({ alice: "pro" });
    const { id } = await create(callers.alice!, 10);
    expect((await call(callers.alice!, "DELETE", `/uploads/${id}`)).status).toBe(204);
    expect((await call(callers.alice!, "GET", `/uploads/${id}`)).status).toBe(404);
  });
});

describe("the upload quota: what an org keeps in the store at once", () => {
  // The free plan's max input size cut to 1,000 bytes: with UPLOAD_QUOTA_FACTOR=3 an org keeps 3,000 bytes of uploads.
  const quotaEnv = (extra: Record<string, string> = {}) => ({ PLANS_JSON: JSON.stringify({ free: { requestsPerMinute: 1000, maxInputBytes: 1000 } }), UPLOAD_QUOTA_FACTOR: "3", ...extra });
  const json = { "content-type": "application/json" };

  it("refuses a tus upload past the org's bytes with 403 PLAN_LIMIT, counts no other org's, and gives a DELETE's bytes back", async () => {
    const { callers, call, create } = await startGateway({ alice: "free", bob: "free" }, {}, quotaEnv());
    const first = await create(callers.alice!, 1000);
    await create(callers.alice!, 1000);
    await create(callers.alice!, 999);
    const refused = await call(callers.alice!, "POST", "/uploads", { "upload-length": "2" });
    expect(refused.status).toBe(403);
    expect((await jsonOf(refused)).error).toEqual({
      code: "PLAN_LIMIT",
      message: "Uploads: the free plan keeps at most 2.9 KB of uploads at a time (2.9 KB kept, 2 bytes asked for); delete uploads no job needs (DELETE /uploads/{id}) or wait for them to expire",
    });
    await create(callers.alice!, 1); // exactly up to the allowance
    await create(callers.bob!, 1000); // another org's allowance is its own

    expect((await call(callers.alice!, "DELETE", `/uploads/${first.id}`)).status).toBe(204);
    await create(callers.alice!, 1000);
  });

  it("reserves the plan's max input size for a deferred-length upload until it finishes, then its real size", async () => {
    const { callers, call, create } = await startGateway({ alice: "free" }, {}, quotaEnv());
    const deferred = await call(callers.alice!, "POST", "/uploads", { "upload-defer-length": "1" });
    expect(deferred.status).toBe(201);
    const id = deferred.headers.get("location")!.split("/").pop()!;
    await create(callers.alice!, 1000);
    await create(callers.alice!, 1000);
    expect((await call(callers.alice!, "POST", "/uploads", { "upload-length": "1" })).status).toBe(403);
    const patch = await call(callers.alice!, "PATCH", `/uploads/${id}`, { "upload-offset": "0", "upload-length": "10", "content-type": "application/offset+octet-stream" }, randomBytes(10));
    expect(patch.status).toBe(204);
    await create(callers.alice!, 990);
    expect((await call(callers.alice!, "POST", "/uploads", { "upload-length": "1" })).status).toBe(403);
  });

  it("counts upload links and inline uploads too, and leaves nothing behind when it refuses one", async () => {
    const { callers, call, create } = await startGateway({ alice: "free" }, {}, quotaEnv());
    const link = await call(callers.alice!, "POST", "/upload-links", json, JSON.stringify({ size: 1000 }));
    expect(link.status).toBe(201);
    const inline = await call(callers.alice!, "POST", "/uploads/inline", json, JSON.stringify({ base64: randomBytes(1000).toString("base64") }));
    expect(inline.status).toBe(201);
    await create(callers.alice!, 500);
    const refusedLink = await call(callers.alice!, "POST", "/upload-links", json, JSON.stringify({ size: 501 }));
    expect(refusedLink.status).toBe(403);
    expect((await jsonOf(refusedLink)).error.code).toBe("PLAN_LIMIT");
    const refusedInline = await call(callers.alice!, "POST", "/uploads/inline", json, JSON.stringify({ base64: randomBytes(501).toString("base64") }));
    expect(refusedInline.status).toBe(403);
    // Only the three taken: the refused link's and inline upload's files were removed again.
    expect(new Set((await readdir(gateway!.uploadDir)).map((name) => name.split(".")[0]))).toHaveProperty("size", 3);
    await create(callers.alice!, 500);
  });

  it("lists the org's kept uploads newest first, page by page, without deleted ones or another org's", async () => {
    const { callers, call, create } = await startGateway({ alice: "free", bob: "free" }, {}, quotaEnv());
    const made: string[] = [];
    for (let index = 0; index < 5; index += 1) made.push((await create(callers.alice!, 10)).id);
    await create(callers.bob!, 10);
    expect((await call(callers.alice!, "DELETE", `/uploads/${made[2]}`)).status).toBe(204);

    const first = await jsonOf(await call(callers.alice!, "GET", "/uploads?limit=3"));
    expect(first.data.map((upload: { id: string }) => upload.id)).toEqual([made[4], made[3], made[1]]);
    expect(first.data[0]).toMatchObject({ size: 10, offset: 0, complete: false });
    const second = await jsonOf(await call(callers.alice!, "GET", `/uploads?limit=3&cursor=${first.nextCursor}`));
    expect(second).toEqual({ data: [expect.objectContaining({ id: made[0] })], nextCursor: null });
    expect((await call(callers.alice!, "GET", "/uploads?limit=0")).status).toBe(400);
    const badCursor = await call(callers.alice!, "GET", "/uploads?cursor=eyJ0IjotMX0");
    expect(badCursor.status).toBe(400);
    expect((await jsonOf(badCursor)).error).toEqual({ code: "VALIDATION_ERROR", message: "cursor: is invalid" });
  });

  it("leaves nothing of a creation answered 500: the reservation given back, an upload stored before a later step failed removed", async () => {
    const { callers, call, create } = await startGateway({ alice: "free" }, {}, quotaEnv());
    const dataStore = gateway!.deps.uploads.dataStore;
    const create_ = dataStore.create.bind(dataStore);
    // The store's own failure (a full disk, a bucket answering 503) once, after the quota was reserved.
    dataStore.create = async () => {
      dataStore.create = create_;
      throw new Error("ENOSPC: no space left on device");
    };
    const failed = await call(callers.alice!, "POST", "/uploads", { "upload-length": "1000" });
    expect(failed.status).toBe(500);
    expect((await jsonOf(failed)).error.code).toBe("INTERNAL_ERROR");

    // A creation that fails after the upload exists (its body stored, the final size not counted: Redis went away)
    // leaves nothing either: the client, which got no Location, creates another.
    const quota = gateway!.deps.uploadQuota;
    const settle = quota.settle.bind(quota);
    quota.settle = async () => {
      quota.settle = settle;
      throw new Error("Connection is closed.");
    };
    const stored = await call(callers.alice!, "POST", "/uploads", { "upload-length": "1000", "content-type": "application/offset+octet-stream" }, randomBytes(1000));
    expect(stored.status).toBe(500);
    expect(stored.headers.get("location")).toBeNull();
    expect((await jsonOf(await call(callers.alice!, "GET", "/uploads"))).data).toEqual([]);
    expect(await readdir(gateway!.uploadDir)).toEqual([]);

    // Both failures gave their bytes back: the quota (3,000 bytes here) takes three uploads of 1,000 again.
    await create(callers.alice!, 1000);
    await create(callers.alice!, 1000);
    await create(callers.alice!, 1000);
    expect((await call(callers.alice!, "POST", "/uploads", { "upload-length": "1" })).status).toBe(403);
  });

  it("refuses an org's upload past UPLOAD_QUOTA_MAX_UPLOADS, however small", async () => {
    const { callers, call, create } = await startGateway({ alice: "free" }, {}, quotaEnv({ UPLOAD_QUOTA_MAX_UPLOADS: "2" }));
    await create(callers.alice!, 1);
    await create(callers.alice!, 1);
    const refused = await call(callers.alice!, "POST", "/uploads", { "upload-length": "1" });
    expect(refused.status).toBe(403);
    expect((await jsonOf(refused)).error.message).toMatch(/^Uploads: an org keeps at most 2 uploads at a time \(2 kept\)/);
  });
});

describe("upload ids as job inputs", () => {
  it("passes a complete upload of the org on to the jobs service, and refuses incomplete, unknown and foreign ones naming the input", async () => {
    const submitted: unknown[] = [];
    const { callers, call, create } = await startGateway({ alice: "pro", mallory: "pro" }, {
      jobs: {
        submitJob: async (request: any) => {
          submitted.push(request.job);
          return { job: { id: "job_1", orgId: "org_x", type: "transcode", status: "waiting", inputs: request.job.inputs, params: {}, metadata: {}, timing: { createdAt: 1 }, webhookDeliveries: [] }, replayed: false } as any;
        },
        submitBatch: async (request: any) => {
          submitted.push(...request.jobs);
          return { id: "batch_1", jobCount: request.jobs.length, jobIds: ["job_1"], status: "running" } as any;
        },
      },
    });
    const submit = (caller: Caller, source: string) =>
      call(caller, "POST", "/jobs", { "content-type": "application/json" }, JSON.stringify({ type: "transcode", inputs: { source }, params: {} }));

    const { id } = await create(callers.alice!, 4);
    const incomplete = await submit(callers.alice!, id);
    expect(incomplete.status).toBe(400);
    expect((await jsonOf(incomplete)).error).toEqual({ code: "VALIDATION_ERROR", message: `inputs.source: upload ${id} is not complete (0 of 4 bytes received)` });

    await call(callers.alice!, "PATCH", `/uploads/${id}`, { "upload-offset": "0", "content-type": "application/offset+octet-stream" }, "abcd");
    const foreign = await submit(callers.mallory!, id);
    expect((await jsonOf(foreign)).error).toEqual({ code: "VALIDATION_ERROR", message: `inputs.source: upload ${id} not found` });
    const unknown = await submit(callers.alice!, "upload_01JBQ0000000000000000000AB");
    expect((await jsonOf(unknown)).error.message).toBe("inputs.source: upload upload_01JBQ0000000000000000000AB not found");
    const batch = await call(callers.mallory!, "POST", "/batches", { "content-type": "application/json" }, JSON.stringify({ jobs: [{ type: "transcode", inputs: { source: id } }] }));
    expect((await jsonOf(batch)).error.message).toBe(`jobs[0].inputs.source: upload ${id} not found`);
    expect(submitted).toEqual([]);

    const accepted = await submit(callers.alice!, id);
    expect(accepted.status).toBe(201);
    expect(submitted).toEqual([expect.objectContaining({ inputs: { source: id } })]);
    // Named by a job, it is kept a week from now (UPLOAD_KEEP_AFTER_USE_HOURS), not 24 h from its creation.
    const kept = (await jsonOf(await call(callers.alice!, "GET", `/uploads/${id}`))).data;
    expect(kept.expiresAt).toBeGreaterThan(Date.now() + 167 * 3_600_000);
  });

  it("looks up only the uploads a job's type can take, each once: names the type does not have are left to the jobs service", async () => {
    const { callers, call, create } = await startGateway({ alice: "pro" }, {
      jobs: {
        // What the jobs service answers to an input name the type does not have.
        submitJob: async () => {
          throw validationError("inputs.i0: is not an input of transcode");
        },
        submitBatch: async () => {
          throw validationError("jobs[0].inputs.i0: is not an input of transcode");
        },
      },
    });
    const { id } = await create(callers.alice!, 4);
    await call(callers.alice!, "PATCH", `/uploads/${id}`, { "upload-offset": "0", "content-type": "application/offset+octet-stream" }, "abcd");
    const describe = vi.spyOn(gateway!.deps.uploads, "describe");
    const many = Object.fromEntries(Array.from({ length: 2_000 }, (_, index) => [`i${index}`, id]));
    const single = await call(callers.alice!, "POST", "/jobs", { "content-type": "application/json" }, JSON.stringify({ type: "transcode", inputs: { source: id, ...many } }));
    expect((await jsonOf(single)).error).toEqual({ code: "VALIDATION_ERROR", message: "inputs.i0: is not an input of transcode" });
    const batch = await call(callers.alice!, "POST", "/batches", { "content-type": "application/json" }, JSON.stringify({ jobs: Array.from({ length: 10 }, () => ({ type: "transcode", inputs: { source: id, ...many } })) }));
    expect(batch.status).toBe(400);
    const unknownType = await call(callers.alice!, "POST", "/jobs", { "content-type": "application/json" }, JSON.stringify({ type: "no.such.type", inputs: many }));
    expect(unknownType.status).toBe(400);
    // The single job's source and the batch's (ten jobs naming it), each checked and read again once kept: never
    // once per name.
    expect(describe).toHaveBeenCalledTimes(4);
  });

  it("refuses an expired upload naming the input, and keeps one a job named past its own retention until the sweep", async () => {
    const jobs = {
      submitJob: async (request: any) =>
        ({ job: { id: "job_1", orgId: "org_x", type: "transcode", status: "waiting", inputs: request.job.inputs, params: {}, metadata: {}, timing: { createdAt: 1 }, webhookDeliveries: [] }, replayed: false }) as any,
    };
    // Uploads live 1.8 s unless used; used ones 1 h.
    const { callers, call, create } = await startGateway({ alice: "pro" }, { jobs }, { UPLOAD_RETENTION_HOURS: "0.0005", UPLOAD_KEEP_AFTER_USE_HOURS: "1" });
    const complete = async () => {
      const { id } = await create(callers.alice!, 2);
      await call(callers.alice!, "PATCH", `/uploads/${id}`, { "upload-offset": "0", "content-type": "application/offset+octet-stream" }, "ok");
      return id;
    };
    const submit = (source: string) => call(callers.alice!, "POST", "/jobs", { "content-type": "application/json" }, JSON.stringify({ type: "transcode", inputs: { source }, params: {} }));
    const [unused, used] = [await complete(), await complete()];
    expect((await submit(used)).status).toBe(201);
    await new Promise((resolve) => setTimeout(resolve, 2000));

    const expired = await submit(unused);
    expect(expired.status).toBe(400);
    expect((await jsonOf(expired)).error).toEqual({ code: "VALIDATION_ERROR", message: `inputs.source: upload ${unused} has expired` });
    expect((await submit(used)).status).toBe(201);
    // The quota counts what the store keeps: the used one still, the expired one no longer.
    const counted = (await jsonOf(await call(callers.alice!, "GET", "/uploads"))).data;
    expect(counted.map((upload: { id: string }) => upload.id)).toEqual([used]);
    expect(await gateway!.deps.uploads.deleteExpired()).toBe(1);
    expect((await call(callers.alice!, "GET", `/uploads/${unused}`)).status).toBe(404);
    expect((await jsonOf(await call(callers.alice!, "GET", `/uploads/${used}`))).data).toMatchObject({ complete: true });
  });
});

describe("uploads for agents: create_upload and upload_media", () => {
  it("creates an upload link whose PATCH completes the upload, and caps its size by plan", async () => {
    const { base, callers, call } = await startGateway({ alice: "free" });
    const json = { "content-type": "application/json" };
    const tooLarge = await call(callers.alice!, "POST", "/upload-links", json, JSON.stringify({ size: 100 * 1024 * 1024 + 1 }));
    expect(tooLarge.status).toBe(413);
    const created = await call(callers.alice!, "POST", "/upload-links", json, JSON.stringify({ size: 5, filename: "a.srt" }));
    expect(created.status).toBe(201);
    const link = (await jsonOf(created)).data;
    expect(link).toMatchObject({ method: "PATCH", headers: { "Tus-Resumable": "1.0.0", "Upload-Offset": "0", "Content-Type": "application/offset+octet-stream" }, upload: { size: 5, offset: 0, complete: false } });
    expect(JSON.stringify(link)).not.toContain(callers.alice!.key);
    // The link is on PUBLIC_URL (the default here); this gateway listens on a free port.
    expect(link.url).toBe(`http://127.0.0.1:3000/uploads/${link.upload.id}`);
    const patched = await fetch(`${base}/uploads/${link.upload.id}`, { method: "PATCH", headers: { ...link.headers, authorization: `Bearer ${callers.alice!.key}` }, body: "hello" });
    expect(patched.status).toBe(204);
    expect((await jsonOf(await call(callers.alice!, "GET", `/uploads/${link.upload.id}`))).data.complete).toBe(true);
  });

  it("stores a small file sent inline as a complete upload, and refuses more than 1 MB or bad base64", async () => {
    const { callers, call } = await startGateway({ alice: "pro" });
    const json = { "content-type": "application/json" };
    const bytes = randomBytes(1024 * 1024);
    const stored = await call(callers.alice!, "POST", "/uploads/inline", json, JSON.stringify({ base64: bytes.toString("base64"), filename: "clip.bin" }));
    expect(stored.status).toBe(201);
    const upload = (await jsonOf(stored)).data;
    expect(upload).toMatchObject({ size: bytes.length, offset: bytes.length, complete: true });
    expect((await storedBytes(upload.id)).equals(bytes)).toBe(true);

    const tooLarge = await call(callers.alice!, "POST", "/uploads/inline", json, JSON.stringify({ base64: randomBytes(1024 * 1024 + 3).toString("base64") }));
    expect(tooLarge.status).toBe(400);
    const notBase64 = await call(callers.alice!, "POST", "/uploads/inline", json, JSON.stringify({ base64: "not base64!" }));
    expect((await jsonOf(notBase64)).error).toEqual({ code: "VALIDATION_ERROR", message: "body.base64: must be base64" });
  });

  it("takes a 1 MB file inline through the MCP tool upload_media (the /mcp body limit leaves room for its base64)", async () => {
    const { base, callers } = await startGateway({ alice: "pro" });
    const bytes = randomBytes(1024 * 1024);
    const response = await fetch(`${base}/mcp`, {
      method: "POST",
      headers: { authorization: `Bearer ${callers.alice!.key}`, "content-type": "application/json", accept: "application/json, text/event-stream" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/call", params: { name: "upload_media", arguments: { base64: bytes.toString("base64"), filename: "clip.mp4" } } }),
    });
    expect(response.status).toBe(200);
    const result = (await jsonOf(response)).result;
    expect(result.isError, JSON.stringify(result.content)).toBeFalsy();
    expect(result.structuredContent.data).toMatchObject({ size: bytes.length, complete: true });
  });
});

/** An upload's bytes as the store keeps them (the disk, or the bucket in a STORAGE=s3 run), read as the worker reads them. */
async function storedBytes(id: string): Promise<Buffer> {
  const destination = join(await mkdtemp(join(tmpdir(), "rb-upload-read-")), "upload.bin");
  await gateway!.deps.uploads.copyTo(id, destination);
  return readFile(destination);
}
